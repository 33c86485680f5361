"""One reconciliation run in three steps, each idempotent and keyed by (pipeline, run id):

1. :func:`snapshot_offsets`: Kafka offsets and the sink's ingest sequence -> the run's window,
   stored in ``recon.offset_snapshots`` / ``recon.runs``. A run id that already has a snapshot
   keeps it, so a retry reads exactly the same window, unless it never committed and another
   run committed since: then it takes a fresh one.
2. :func:`snapshot_topic`: Spark reads the window (read_committed) and the pending records (the
   driver reads a small window, or any with a local Spark master:
   ``recon.engines.spark_snapshot.window_on_driver``),
   extracts messageIds, writes Parquet under ``<data dir>/windows/<pipeline>/<run id>/``.
3. :func:`reconcile_run`: window + the run's sink rows + the ledger version the run started from
   -> verdicts; a read_uncommitted pass only when phantoms appear; a new ledger version (the run's
   entries on top of its base, ``recon.ledger``); then one PostgreSQL transaction commits
   results, watermarks and the ledger pointer.

Step 1 resolves the run's plan and records it (``recon.engines.plan``); steps 2 and 3 and the
validation each load it once (``load_plan``) and hand it down: nothing below them asks the
catalogs, the results store or the settings again for what it holds. They belong to the
pipeline's engine, chosen here and nowhere else (:func:`engine_for`, by the plan's engine):
``recon.engines.spark_snapshot`` and ``recon.engines.spark_run`` (Spark; Great Expectations on
Spark; the driver reads a small run's window and validates its results itself:
:func:`step_needs_spark`) or ``recon.engines.local_run`` (DuckDB; Great Expectations on pandas; no
JVM).
Step 3 is one driver for both (``recon.engines.driver``): an engine gives it only its IO.
What both share lives in ``recon.run.services`` (connections, paths) and ``recon.run.outcome`` (the
outcome they commit). The CLI runs the three in one process; the Airflow DAG runs them as tasks;
``spark_apps/`` wraps steps 2 and 3 for ``spark-submit``. All go through this module.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, cast

from recon import store
from recon.config import PipelineConfig
from recon.engines import DRIVER_STEPS as DRIVER_STEPS
from recon.engines import needs_spark as needs_spark
from recon.engines.plan import PlannedRun, load_plan, resolve_plan
from recon.errors import first_line
from recon.run.ids import check_run_id

# Re-exported: callers (the CLI, tests, plugins) find these here.
from recon.run.outcome import DISCREPANCY_SAMPLE as DISCREPANCY_SAMPLE
from recon.run.outcome import RunSummary as RunSummary
from recon.run.outcome import failure_recorded as failure_recorded
from recon.run.outcome import redact as redact
from recon.run.paths import results_path as results_path
from recon.run.paths import window_path as window_path
from recon.run.services import DEFAULT_RESULTS_CONN_ID as DEFAULT_RESULTS_CONN_ID
from recon.run.services import Progress as Progress
from recon.run.services import default_data_dir as default_data_dir
from recon.run.services import noop, results_db, sink_db
from recon.run.services import results_conn_id as results_conn_id
from recon.store.claims import run_claim

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["results_db", "sink_db"]


class EngineSteps(NamedTuple):
    """Steps 2 and 3 and the validation of one engine, with the same call for every engine:
    each takes the run's plan (``recon.engines.plan.PlannedRun``) and asks nothing again."""

    #: ``(plan, *, progress)`` -> the Parquet paths by part.
    snapshot_topic: Callable[..., dict[str, str]]
    #: ``(plan, *, progress)`` -> the run's summary.
    reconcile_run: Callable[..., RunSummary]
    #: ``(plan)`` -> the ``recon.validation.ValidationOutcome`` of the run's results Parquet.
    validate: Callable[[PlannedRun], Any]


def engine_for(plan: PlannedRun, spark: SparkSession | None) -> EngineSteps:
    """Steps 2 and 3 and the validation of the run's engine: the one place that chooses by the
    engine (its plan's, as :func:`needs_spark` said).

    :param spark: the Spark engine's session (None for ``engine: local``, which needs none and
        never touches Spark: its validation reads the results Parquet into pandas; and for the
        Spark engine's steps that :func:`step_needs_spark` says need none).
    """
    if not plan.engine.spark:
        from recon.engines import local_run as local_engine

        return EngineSteps(
            local_engine.snapshot_topic, local_engine.reconcile_run, local_engine.validate
        )
    from recon.engines import spark_run, spark_snapshot

    reconcile: Callable[..., RunSummary] = _needs_session
    if spark is not None:
        reconcile = functools.partial(spark_run.reconcile_run, spark=spark)
    return EngineSteps(
        functools.partial(spark_snapshot.snapshot_topic, spark=spark),
        reconcile,
        functools.partial(spark_run.validate, spark=spark),
    )


def _needs_session(plan: PlannedRun, *args: Any, **kwargs: Any) -> Any:
    raise ValueError(
        f"pipeline '{plan.cfg.name}': the Spark engine's reconcile needs a SparkSession"
    )


def step_needs_spark(
    cfg: PipelineConfig, run_id: str, step: str, *, data_dir: str | None = None
) -> bool:
    """Whether ``step`` of the run (``snapshot_topic``, ``reconcile`` or ``validate``) needs a
    SparkSession: every step of the Spark engine does, except that the driver reads a run's
    window (``recon.engines.spark_snapshot.window_on_driver``: a small one, or any with a local
    Spark master) and validates a small run's results itself
    (``recon.engines.spark_snapshot.reads_on_driver``); a caller that would start one for the
    step (an Airflow task) then starts none.
    """
    if not needs_spark(cfg):
        return False
    if step not in DRIVER_STEPS:
        return True
    from recon.engines import spark_snapshot

    plan = load_plan(cfg, run_id, data_dir=data_dir)
    if step == "snapshot_topic":
        return not spark_snapshot.window_on_driver(plan)
    return not spark_snapshot.reads_on_driver(plan)


Step = TypeVar("Step", bound=Callable[..., Any])


def _claimed(step: Step) -> Step:
    """``step`` of a run (``step(cfg, run_id, ...)``) done only by a process that holds the run
    id (``recon.store.claims``), after the id is checked (``recon.run.ids``): another process on
    the same run id is told so at once, and nothing is read or written twice."""

    @functools.wraps(step)
    def claimed(cfg: PipelineConfig, run_id: str, *args: Any, **kwargs: Any) -> Any:
        with run_claim(cfg.name, check_run_id(run_id, cfg.name)):
            return step(cfg, run_id, *args, **kwargs)

    return cast(Step, claimed)


# --- step 1 -------------------------------------------------------------------------------------


@_claimed
def snapshot_offsets(
    cfg: PipelineConfig, run_id: str, *, now: float | None = None, progress: Progress = noop
) -> store.RunRecord:
    """Take (or reuse) the run's snapshot: record its plan (``recon.engines.plan``).

    :param cfg: the pipeline.
    :param run_id: the run's id (Airflow's run id, or one the CLI makes).
    :param now: snapshot time in epoch seconds, for the settle time (default: now).
    :param progress: called with a line per step.
    :raises recon.run.ids.InvalidRunId: ``run_id`` cannot name the run's folders.
    """
    with results_db() as pg:
        store.ensure_schema(pg)
        existing = store.find_run(pg, cfg.name, run_id)
        base = store.load_state(pg, cfg.name)
        if existing is not None and (existing.committed or existing.base_run_id == base.run_id):
            progress(f"run {run_id}: reusing its snapshot of {existing.snapshot_at:%F %T}")
            return existing
        if existing is not None:
            # Another run committed since this one's snapshot: its window was judged there, and
            # judging it again would count it twice.
            progress(f"run {run_id}: run {base.run_id} committed after its snapshot: taking anew")
        plan = resolve_plan(cfg, run_id, base, now=now)
        if plan.sink_read is not None:
            progress(f"run {run_id}: {plan.sink_read}")
        store.record_snapshot(
            pg,
            pipeline=cfg.name,
            run_id=run_id,
            semantics=cfg.semantics,
            snapshot_at=datetime.fromtimestamp(plan.snapshot_time, UTC),
            windows=list(plan.windows),
            base=plan.base,
            sink=plan.sink_position,
            catalog=plan.catalog.as_json(),
        )
        record = store.find_run(pg, cfg.name, run_id)
    assert record is not None
    progress(
        f"run {run_id}: window of {plan.offsets} offsets in {len(plan.windows)} partitions"
        + (" (rewind seen)" if any(w.rewound for w in plan.windows) else "")
    )
    return record


# --- steps 2 and 3: the pipeline's engine -------------------------------------------------------


@_claimed
def snapshot_topic(
    cfg: PipelineConfig,
    run_id: str,
    spark: SparkSession | None,
    *,
    data_dir: str | None = None,
    progress: Progress = noop,
) -> dict[str, str]:
    """Read the run's window parts into Parquet with the pipeline's engine.

    :param spark: the session of the Spark engine (None for ``engine: local``).
    :returns: the Parquet paths by part (``committed``, ``pending``, ...).
    """
    with failure_recorded(cfg, run_id, progress):
        plan = load_plan(cfg, run_id, data_dir=data_dir)
    return _read_window(plan, engine_for(plan, spark), progress)


@_claimed
def reconcile_run(
    cfg: PipelineConfig,
    run_id: str,
    spark: SparkSession | None,
    *,
    data_dir: str | None = None,
    progress: Progress = noop,
) -> RunSummary:
    """Judge every message of the run with the pipeline's engine and commit the results exactly
    once.

    :param spark: the session of the Spark engine (None for ``engine: local``).
    :raises store.ConcurrentRunError: another run advanced the pipeline meanwhile.
    """
    plan = load_plan(cfg, run_id, data_dir=data_dir)
    return _reconcile(plan, engine_for(plan, spark), progress)


@_claimed
def validate_step(
    cfg: PipelineConfig,
    run_id: str,
    spark: SparkSession | None,
    *,
    data_dir: str | None = None,
    progress: Progress = noop,
) -> Any:
    """Run the Great Expectations checkpoint of the claimed semantic over the run's results with
    the pipeline's engine (Spark, or pandas for ``engine: local``) and record its decision and
    Data Docs link on ``recon.runs``.

    :param spark: the session of the Spark engine (None for ``engine: local``).
    :returns: the ``recon.validation.ValidationOutcome``.
    """
    plan = load_plan(cfg, run_id, data_dir=data_dir)
    return _validate(plan, engine_for(plan, spark), progress)


@_claimed
def run_pipeline(
    cfg: PipelineConfig,
    run_id: str,
    spark: SparkSession | None,
    *,
    data_dir: str | None = None,
    progress: Progress = noop,
) -> RunSummary:
    """Every step, as ``recon run`` does: snapshot, read, reconcile, validate; the plan step 1
    recorded is loaded once and serves the three after it.

    :param spark: the session of the Spark engine (None for ``engine: local``).
    """
    snapshot_offsets(cfg, run_id, progress=progress)
    plan = load_plan(cfg, run_id, data_dir=data_dir)
    steps = engine_for(plan, spark)
    _read_window(plan, steps, progress)
    summary = _reconcile(plan, steps, progress)
    outcome = _validate(plan, steps, progress)
    summary.contract_passed = outcome.passed
    summary.status = "passed" if outcome.passed else "failed"
    summary.violations = outcome.failures
    summary.validation_url = outcome.data_docs_path
    return summary


# --- what each step does with the run's plan ----------------------------------------------------


def _read_window(plan: PlannedRun, steps: EngineSteps, progress: Progress) -> dict[str, str]:
    with failure_recorded(plan.cfg, plan.run_id, progress):
        return steps.snapshot_topic(plan, progress=progress)


def _reconcile(plan: PlannedRun, steps: EngineSteps, progress: Progress) -> RunSummary:
    summary = steps.reconcile_run(plan, progress=progress)
    _verify_repairs(plan, progress)
    return summary


def _verify_repairs(plan: PlannedRun, progress: Progress) -> None:
    """Judge the pipeline's applied repair plans against the sink this run saw. The run's
    results are committed already: a failure here is reported and left to the next run."""
    from recon.repair.verify import verify_repairs

    try:
        verify_repairs(plan.cfg, plan.record, progress)
    except Exception as exc:  # noqa: BLE001 - the run stands; the next one judges again
        progress(
            f"run {plan.run_id}: repair verification skipped: {redact(first_line(exc), plan.cfg)}"
        )


def _validate(plan: PlannedRun, steps: EngineSteps, progress: Progress) -> Any:
    from recon.validation import record_validation

    with failure_recorded(plan.cfg, plan.run_id, progress):
        outcome = steps.validate(plan)
        with results_db() as pg:
            record_validation(pg, plan.cfg.name, plan.run_id, outcome)
    progress(
        f"run {plan.run_id}: validation {'passed' if outcome.passed else 'FAILED'}; "
        f"Data Docs: {outcome.data_docs_path}"
    )
    return outcome
