"""Thin operators: each resolves the pipeline and its connections at run time and calls one step
of ``recon.run.steps`` (in-process, or under spark-submit for the Spark steps).

Every operator validates its arguments at construction (the DAG file fails to import with a
clear message otherwise) and is idempotent per Airflow run id: a retry, clear or backfill
replaces the run's own results.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from recon import settings
from recon.engines import DRIVER_STEPS

SPARK_STEPS = ("snapshot_topic", "reconcile", "validate")


def _load(pipeline: str, pipelines_file: str | None) -> Any:
    from recon.config import load_pipelines
    from recon.stack.preflight import get_pipeline

    return get_pipeline(load_pipelines(pipelines_file), pipeline)


def _check_name(pipeline: str) -> None:
    if not pipeline or not isinstance(pipeline, str):
        raise ValueError("pipeline must be a non-empty string")


class _StepLineage:
    """The step's OpenLineage datasets (``recon_airflow.lineage``), asked for by Airflow's
    OpenLineage provider when the task ends, whether it succeeded or failed."""

    pipeline: str
    pipelines_file: str | None
    step: str
    results_conn_id: str | None = None
    #: ``(passed, failures)`` of a validate step judged in this process, for its assertions facet.
    _validation: tuple[bool, list[dict[str, Any]]] | None = None

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        from recon_airflow.hooks import use_airflow_connections
        from recon_airflow.lineage import step_lineage

        use_airflow_connections()
        cfg = _load(self.pipeline, self.pipelines_file)
        results_conn_id = self.results_conn_id or settings.results_conn_id()
        return step_lineage(cfg, self.step, results_conn_id, validation=self._validation)


class SnapshotOffsetsOperator(_StepLineage, BaseOperator):
    """Snapshot the topic's offsets and the group's committed offsets; fix the run's window.

    :param pipeline: the pipeline's name in the YAML.
    :param pipelines_file: the YAML (default: ``$RECON_PIPELINES``).
    """

    template_fields: Sequence[str] = ("pipeline",)
    ui_color = "#e8f1fb"
    step = "snapshot_offsets"

    def __init__(self, *, pipeline: str, pipelines_file: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        _check_name(pipeline)
        self.pipeline = pipeline
        self.pipelines_file = pipelines_file

    def execute(self, context: Any) -> dict[str, Any]:
        from recon.errors import ReconError, ServiceUnavailable
        from recon.run import steps as engine
        from recon.stack.preflight import check_pipeline
        from recon_airflow.hooks import use_airflow_connections

        use_airflow_connections()
        try:
            cfg = _load(self.pipeline, self.pipelines_file)
            check_pipeline(cfg)
            record = engine.snapshot_offsets(cfg, context["run_id"], progress=self.log.info)
        except ServiceUnavailable as exc:
            # A broker or database that is down now may be back for the task's next try.
            raise AirflowException(str(exc)) from None
        except ReconError as exc:
            # A user mistake (config, missing topic/table/connection): fail without retries.
            raise AirflowFailException(str(exc)) from None
        return {
            "partitions": len(record.windows),
            "window_offsets": sum(w.window_to - w.read_from for w in record.windows),
            "rewinds": [w.partition for w in record.windows if w.rewound],
        }


LOCAL_STEPS = ("snapshot_topic", "reconcile", "validate")


class LocalStepOperator(_StepLineage, BaseOperator):
    """One step of a run of an ``engine: local`` pipeline (``snapshot_topic``, ``reconcile`` or
    ``validate``) in the task's own process: no JVM (``recon.engines.local_run``, whose Kafka
    readers are processes of their own; Great Expectations on pandas). Like the Spark step,
    ``validate`` fails when the run broke its contract; the alert task runs either way.

    :param pipeline: the pipeline's name in the YAML.
    :param step: ``snapshot_topic``, ``reconcile`` or ``validate``.
    :param pipelines_file: the YAML (default: ``$RECON_PIPELINES``).
    """

    template_fields: Sequence[str] = ("pipeline",)
    ui_color = "#eef7e8"

    def __init__(
        self, *, pipeline: str, step: str, pipelines_file: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        _check_name(pipeline)
        if step not in LOCAL_STEPS:
            raise ValueError(f"step must be one of {', '.join(LOCAL_STEPS)}, not {step!r}")
        self.pipeline = pipeline
        self.step = step
        self.pipelines_file = pipelines_file

    def execute(self, context: Any) -> dict[str, Any]:
        return _step_in_process(self, context, spark=None)


def _step_in_process(op: Any, context: Any, spark: Any) -> dict[str, Any]:
    """Step ``op.step`` of ``op.pipeline``'s run in the task's own process, on ``spark`` (None:
    the local engine, or a Spark engine's step that needs none; else a Spark Connect session):
    the connections through Airflow, a user's mistake failing the task without retries, a
    service that is down failing it for a retry.
    ``validate`` fails the task when the run broke its contract."""
    from recon.errors import ReconError, ServiceUnavailable
    from recon.run import steps as engine
    from recon_airflow.hooks import use_airflow_connections
    from recon_airflow.metrics import emit_run_metrics

    use_airflow_connections()
    run_id = context["run_id"]
    try:
        cfg = _load(op.pipeline, op.pipelines_file)
        if op.step == "snapshot_topic":
            return {"paths": engine.snapshot_topic(cfg, run_id, spark, progress=op.log.info)}
        if op.step == "validate":
            outcome = engine.validate_step(cfg, run_id, spark, progress=op.log.info)
        else:
            summary = engine.reconcile_run(cfg, run_id, spark, progress=op.log.info)
    except ServiceUnavailable as exc:
        raise AirflowException(str(exc)) from None
    except ReconError as exc:
        raise AirflowFailException(str(exc)) from None
    if op.step == "validate":
        op._validation = (outcome.passed, list(outcome.failures))
        if not outcome.passed:
            raise AirflowFailException(
                f"pipeline '{cfg.name}' broke its {cfg.semantics} contract: "
                + ", ".join(f"{f['rule']} observed {f['observed']}" for f in outcome.failures)
            )
        return {"passed": outcome.passed, "failures": outcome.failures}
    overall = summary.latency["overall"] if summary.latency else None
    emit_run_metrics(cfg.name, summary.counts, summary.duration_seconds, latency=overall)
    return {"status": summary.status, "counts": summary.counts,
            "discrepancies": summary.discrepancies}  # fmt: skip


class ReconSparkSubmitOperator(_StepLineage, SparkSubmitOperator):
    """One Spark step of a run (``snapshot_topic``, ``reconcile`` or ``validate``) under
    spark-submit, on the master of the Spark connection (``local[*]`` or ``spark://host:port``);
    or, when ``RECON_SPARK_REMOTE`` names a Spark Connect server as the task runs, in the task's
    own process as that server's client (no JVM, no spark-submit). The ``snapshot_topic`` and
    ``validate`` of a run small enough for the driver (``recon.run.steps.step_needs_spark``) run in
    the task's own process without Spark.

    The child process cannot ask Airflow for connections: the ones it needs are resolved here
    and handed over as ``AIRFLOW_CONN_*`` variables (Airflow masks their secrets in logs).

    :param pipeline: the pipeline's name in the YAML.
    :param step: one of ``snapshot_topic``, ``reconcile``, ``validate``.
    :param pipelines_file: the YAML (default: ``$RECON_PIPELINES``).
    :param results_conn_id: the results database's connection id (default: the one the
        in-process steps use, ``recon.settings.results_conn_id()`` when the task runs).
    """

    template_fields: Sequence[str] = (*SparkSubmitOperator.template_fields, "pipeline")

    def __init__(
        self,
        *,
        pipeline: str,
        step: str,
        pipelines_file: str | None = None,
        results_conn_id: str | None = None,
        conn_id: str = "spark_default",
        **kwargs: Any,
    ) -> None:
        # A pool caps concurrent Spark drivers; RECON_SPARK_POOL names it (scripts/airflow.sh
        # creates recon_spark), else Airflow's default pool.
        kwargs.setdefault("pool", settings.spark_pool())
        _check_name(pipeline)
        if step not in SPARK_STEPS:
            raise ValueError(f"step must be one of {', '.join(SPARK_STEPS)}, not {step!r}")
        from recon.spark import DRIVER_ENV, spark_settings
        from recon.spark.jars import spark_jar_settings

        args = ["--pipeline", pipeline, "--run-id", "{{ run_id }}", "--step", step]
        if pipelines_file:
            args += ["--pipelines", pipelines_file]
        super().__init__(
            # The checkout's spark_apps/reconcile.py, or the copy an installed wheel carries.
            application=settings.spark_app(),
            application_args=args,
            conn_id=conn_id,
            name=f"recon-{pipeline}-{step}",
            # The CLI's settings, one source: the extra jars (fetched, else resolved by Spark),
            # loopback only, no UI, secrets redacted.
            conf={**spark_jar_settings(), **spark_settings()},
            # The driver's UI address is an environment variable, not a setting.
            env_vars=dict(DRIVER_ENV),
            **kwargs,
        )
        self.pipeline = pipeline
        self.step = step
        self.pipelines_file = pipelines_file
        self.results_conn_id = results_conn_id

    def execute(self, context: Any) -> None:
        if self.step in DRIVER_STEPS and not self._needs_spark(context):
            # A small run's window and results are read by this process
            # (recon.run.steps.step_needs_spark): no JVM, no Spark Connect session for the step.
            _step_in_process(self, context, spark=None)
            return
        remote = settings.spark_remote()
        if remote:
            # As under spark-submit, the step's outcome is in the results, not in XCom.
            self._step_on_server(context, remote)
            return
        from recon.errors import ReconError
        from recon_airflow.hooks import connections_env

        # Resolved when the task runs, as snapshot and alert resolve it: one results database.
        results_conn_id = self.results_conn_id or settings.results_conn_id()
        try:
            cfg = _load(self.pipeline, self.pipelines_file)
            conn_ids = sorted({cfg.kafka.connection, cfg.sink.connection, results_conn_id})
            env = connections_env(conn_ids)
        except ReconError as exc:
            raise AirflowFailException(str(exc)) from None
        env[settings.RECON_RESULTS_CONN_ID] = results_conn_id
        env["PYSPARK_PYTHON"] = os.environ.get("PYSPARK_PYTHON") or _python()
        self.env_vars = {**(self.env_vars or {}), **env}
        super().execute(context)
        if self.step == "reconcile":
            from recon_airflow.hooks import use_airflow_connections
            from recon_airflow.metrics import emit_stored_run_metrics

            # The counts are the child's: read from what it committed, through Airflow.
            use_airflow_connections()
            emit_stored_run_metrics(cfg, context["run_id"], self.log)

    def _needs_spark(self, context: Any) -> bool:
        from recon.errors import ReconError, ServiceUnavailable
        from recon.run import steps as engine
        from recon_airflow.hooks import use_airflow_connections

        use_airflow_connections()
        try:
            cfg = _load(self.pipeline, self.pipelines_file)
            return engine.step_needs_spark(cfg, context["run_id"], self.step)
        except ServiceUnavailable as exc:
            raise AirflowException(str(exc)) from None
        except ReconError as exc:
            raise AirflowFailException(str(exc)) from None

    def _step_on_server(self, context: Any, remote: str) -> None:
        """The step in this process as a client of the Spark Connect server at ``remote``: a
        server that cannot be reached, or goes away mid-step, fails the task for a retry in one
        line that names it (not a gRPC traceback)."""
        from recon.errors import ServiceUnavailable
        from recon.spark import driver_gone, remote_session, server_unreachable

        try:
            spark = remote_session(f"recon-{self.pipeline}-{self.step}", remote)
        except ServiceUnavailable as exc:
            raise AirflowException(str(exc)) from None
        lost = False
        try:
            _step_in_process(self, context, spark)
        except Exception as exc:
            lost = server_unreachable(exc)
            if not lost:
                raise
            during = f"step {self.step!r} of run {context['run_id']!r}"
            raise AirflowException(
                f"{driver_gone(self.pipeline, remote, during, exc)}: the run commits all of its "
                "results or none; the task's retry runs the step again"
            ) from None
        finally:
            if not lost:  # a session of a server that is gone would only retry its goodbye
                spark.stop()


def _python() -> str:
    import sys

    return sys.executable


class AlertOperator(BaseOperator):
    """After validation: when the run broke the claimed contract, send the data-quality alerts
    (once per run, however often this task runs) and fail, so the DAG run shows red. When it kept
    it, the events of the task's outlets (the sink's Asset) carry the run's verified extent.

    :param pipeline: the pipeline's name in the YAML.
    :param pipelines_file: the YAML (default: ``$RECON_PIPELINES``).
    """

    template_fields: Sequence[str] = ("pipeline",)
    ui_color = "#fdecea"

    def __init__(self, *, pipeline: str, pipelines_file: str | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("trigger_rule", "all_done")
        super().__init__(**kwargs)
        _check_name(pipeline)
        self.pipeline = pipeline
        self.pipelines_file = pipelines_file

    def execute(self, context: Any) -> dict[str, Any]:
        from recon.alert.for_run import alert_for_run
        from recon.store import RunNotFound
        from recon_airflow.hooks import use_airflow_connections

        use_airflow_connections()
        cfg = _load(self.pipeline, self.pipelines_file)
        try:
            result = alert_for_run(cfg, context["run_id"], dag_id=context["dag"].dag_id)
        except RunNotFound:
            # This task runs whatever happened upstream; the cause is in snapshot_offsets' log.
            raise AirflowFailException(
                f"pipeline '{cfg.name}': run '{context['run_id']}' has no offset snapshot "
                "(snapshot_offsets failed or did not run): nothing to judge or alert on"
            ) from None
        if result["status"] == "error":
            raise AirflowFailException(f"the run did not finish: {result.get('error')}")
        if not result["contract_passed"]:
            raise AirflowFailException(
                f"pipeline '{cfg.name}' broke its {cfg.semantics} contract: "
                + ", ".join(f"{k}={v}" for k, v in result["violations"].items())
                + f"; alerts: {result['channels']}"
            )
        _emit_verified(self, cfg, context)
        return result


def _emit_verified(op: BaseOperator, cfg: Any, context: Any) -> None:
    """Put the run's verified extent (``recon.store.verified``) on the event of each Asset the
    task emits (its outlets: the pipeline's sink). Only a run that kept its contract gets here: a
    task that fails emits no Asset event."""
    if not op.outlets:
        return
    from recon.run.services import results_db
    from recon.store.verified import read_extent

    with results_db() as pg:
        verified = read_extent(pg, cfg.name, context["run_id"], cfg.settle_seconds)
    extra = verified.as_extra()
    for asset in op.outlets:
        context["outlet_events"][asset].extra = extra
    op.log.info("verified extent of %s: watermark %s", cfg.name, extra["watermark"])
