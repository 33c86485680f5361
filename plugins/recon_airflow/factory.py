"""Build the DAGs of each declared pipeline: its reconciliation DAG (:func:`build_dag`) and its
repair DAG (:func:`build_repair_dag`). Imports only Airflow's DAG API, the YAML loader,
``recon.engines.needs_spark`` (which imports nothing) and the sink's Asset
(``recon_airflow.lineage.sink_asset``)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from airflow.sdk import DAG

DAG_PREFIX = "recon_"
REPAIR_DAG_PREFIX = "recon_repair_"


def dag_id_for(pipeline: str) -> str:
    return f"{DAG_PREFIX}{pipeline}"


def repair_dag_id_for(pipeline: str) -> str:
    return f"{REPAIR_DAG_PREFIX}{pipeline}"


def build_dags(cfg: Any, pipelines_file: str | None = None) -> list[DAG]:
    """Every DAG of one pipeline: its reconciliation DAG, then its repair DAG."""
    return [build_dag(cfg, pipelines_file), build_repair_dag(cfg, pipelines_file)]


def register(namespace: dict[str, Any], dags: list[DAG], source: str) -> None:
    """Put ``dags`` into a DAG file's globals, refusing a DAG id the file already holds (a
    pipeline named ``repair_x`` beside one named ``x`` would give two DAGs one id).

    :raises ValueError: naming the DAG id and ``source``, so the DAG file fails to import.
    """
    for dag in dags:
        if dag.dag_id in namespace:
            raise ValueError(
                f"{source}: DAG id '{dag.dag_id}' is made twice (a pipeline named "
                f"'{dag.dag_id.removeprefix(DAG_PREFIX)}' clashes with the repair DAG of "
                "another): rename one of the pipelines"
            )
        namespace[dag.dag_id] = dag


def build_dag(cfg: Any, pipelines_file: str | None = None) -> DAG:
    """snapshot_offsets -> snapshot_topic -> reconcile -> validate -> alert, for one pipeline;
    then prune, when the pipeline declares ``retention_days``.

    :param cfg: a ``recon.config.PipelineConfig``.
    :param pipelines_file: handed to the tasks so they read the same YAML at run time.
    """
    from recon.engines import needs_spark
    from recon_airflow.callbacks import notify_task_failure
    from recon_airflow.lineage import sink_asset
    from recon_airflow.operators import (
        AlertOperator,
        LocalStepOperator,
        ReconSparkSubmitOperator,
        SnapshotOffsetsOperator,
    )

    default_args = {
        "retries": cfg.retries,
        "retry_delay": timedelta(seconds=30),
        "owner": "recon",
    }
    with DAG(
        dag_id=dag_id_for(cfg.name),
        schedule=cfg.schedule,
        start_date=datetime(2026, 1, 1),
        catchup=cfg.catchup,
        max_active_runs=1,
        default_args=default_args,
        tags=["recon", cfg.semantics, *cfg.tags],
        description=f"Delivery reconciliation of {cfg.kafka.topic} -> {cfg.sink.table} "
        f"({cfg.semantics})",
        doc_md=(
            f"Proves or disproves the **{cfg.semantics}** claim of pipeline `{cfg.name}`: "
            f"topic `{cfg.kafka.topic}`, group `{cfg.kafka.consumer_group}`, sink "
            f"`{cfg.sink.table}`. Results: schema `recon`; page: *Delivery reconciliation*."
        ),
    ) as dag:
        common = {"pipeline": cfg.name, "pipelines_file": pipelines_file}
        # Operational failures notify; a broken contract is the alert task's job.
        notify = notify_task_failure  # on the steps that do the work, not validate and alert
        snapshot_offsets = SnapshotOffsetsOperator(
            task_id="snapshot_offsets", on_failure_callback=notify, **common
        )
        # A pipeline on the local engine reads, judges and validates in the task's process, no
        # JVM; a Spark pipeline runs those steps under spark-submit.
        step_operator: Any = ReconSparkSubmitOperator if needs_spark(cfg) else LocalStepOperator
        snapshot_topic = step_operator(
            task_id="snapshot_topic", step="snapshot_topic", on_failure_callback=notify, **common
        )
        reconcile = step_operator(
            task_id="reconcile", step="reconcile", on_failure_callback=notify, **common
        )
        validate = step_operator(task_id="validate", step="validate", retries=0, **common)
        # The sink's Asset: an event after each run that kept its contract (the task fails
        # otherwise), carrying the verified extent, for DAGs scheduled on verified data.
        alert = AlertOperator(task_id="alert", retries=1, outlets=[sink_asset(cfg)], **common)
        snapshot_offsets >> snapshot_topic >> reconcile >> validate >> alert
        if cfg.retention_days is not None:
            from recon_airflow.prune import PruneOperator

            alert >> PruneOperator(task_id="prune", retries=1, **common)
    return dag


def build_repair_dag(cfg: Any, pipelines_file: str | None = None) -> DAG:
    """``recon_repair_<pipeline>``: apply one repair plan (``recon repair plan`` made it, kept in
    ``recon.repairs``) under Airflow's audit trail. Manual trigger only, with the plan id as the
    required param ``plan_id``; one run at a time.

    :param cfg: a ``recon.config.PipelineConfig``.
    :param pipelines_file: handed to the task so it reads the same YAML at run time.
    """
    from airflow.sdk import Param

    from recon_airflow.callbacks import notify_task_failure
    from recon_airflow.repair import ApplyRepairOperator

    with DAG(
        dag_id=repair_dag_id_for(cfg.name),
        schedule=None,
        start_date=datetime(2026, 1, 1),
        catchup=False,
        max_active_runs=1,
        # An apply is safe to run again (a second one finishes a first that died half-way), so
        # a broker or database that was down gets one more try; a refused plan gets none.
        default_args={"retries": 1, "retry_delay": timedelta(seconds=30), "owner": "recon"},
        params={
            "plan_id": Param(
                type="string",
                minLength=1,
                title="Plan id",
                description=f"The id of a plan of pipeline {cfg.name} (`recon repair plan "
                f"--pipeline {cfg.name}` prints it; the reconciliation page lists them).",
            )
        },
        tags=["recon", "repair", cfg.semantics, *cfg.tags],
        description=f"Apply a repair plan of pipeline {cfg.name} ({cfg.kafka.topic} -> "
        f"{cfg.sink.table})",
        doc_md=(
            f"Applies one repair plan of pipeline `{cfg.name}`: its sink deletes in one "
            f"transaction on `{cfg.sink.table}`, then its replays to Kafka. Trigger it with the "
            "plan id (`recon repair plan` makes plans; the page *Delivery reconciliation* lists "
            "them). `recon.repairs` records it as applied by this DAG run; the next run of "
            f"`{dag_id_for(cfg.name)}` verifies it. Applying a plan twice changes nothing."
        ),
    ) as dag:
        ApplyRepairOperator(
            task_id="apply_plan",
            pipeline=cfg.name,
            plan_id="{{ params.plan_id }}",
            pipelines_file=pipelines_file,
            on_failure_callback=notify_task_failure,
        )
    return dag
