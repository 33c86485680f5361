"""Build one DAG per declared pipeline. Imports only Airflow's DAG API, the YAML loader and
``recon.engines.needs_spark`` (which imports nothing)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from airflow.sdk import DAG

DAG_PREFIX = "recon_"


def dag_id_for(pipeline: str) -> str:
    return f"{DAG_PREFIX}{pipeline}"


def build_dag(cfg: Any, pipelines_file: str | None = None) -> DAG:
    """snapshot_offsets -> snapshot_topic -> reconcile -> validate -> alert, for one pipeline.

    :param cfg: a ``recon.config.PipelineConfig``.
    :param pipelines_file: handed to the tasks so they read the same YAML at run time.
    """
    from recon.engines import needs_spark
    from recon_airflow.callbacks import notify_task_failure
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
        alert = AlertOperator(task_id="alert", retries=1, **common)
        snapshot_offsets >> snapshot_topic >> reconcile >> validate >> alert
    return dag
