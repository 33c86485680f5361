"""One reconciliation run in three steps, each idempotent and keyed by (pipeline, run id):

1. :func:`snapshot_offsets`: Kafka offsets and the sink's ingest sequence -> the run's window,
   stored in ``recon.offset_snapshots`` / ``recon.runs``. A run id that already has a snapshot
   keeps it, so a retry reads exactly the same window, unless it never committed and another
   run committed since: then it takes a fresh one.
2. :func:`snapshot_topic`: Spark reads the window (read_committed) and the pending records,
   extracts messageIds, writes Parquet under ``<data dir>/windows/<pipeline>/<run id>/``.
3. :func:`reconcile_run`: window + the run's sink rows + the ledger version the run started from
   -> verdicts; a read_uncommitted pass only when phantoms appear; a new ledger version (the run's
   entries on top of its base, ``recon.ledger``); then one PostgreSQL transaction commits
   results, watermarks and the ledger pointer.

The CLI runs the three in one process; the Airflow DAG runs them as tasks; ``spark_apps/`` wraps
steps 2 and 3 for ``spark-submit``. All share this module.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from recon import store
from recon.config import PipelineConfig
from recon.connections import kafka_connection, postgres_connection
from recon.contract import evaluate_contract
from recon.details import LATE_DELIVERY
from recon.errors import first_line
from recon.kafka_read import OffsetRange, extract_message_ids, read_kafka_ranges

# Re-exported: callers (the CLI, tests, plugins) find a run's paths here.
from recon.paths import _safe
from recon.paths import results_path as results_path
from recon.paths import window_path as window_path
from recon.pending import partition_ends, spark_carried_pending
from recon.sink_position import take_sink_position
from recon.sink_read import inspect_sink, read_sink_rows, sink_query
from recon.snapshot import KafkaAuthFailed, scrub, take_offsets
from recon.verdicts import Verdict
from recon.window import PartitionWindow, plan_windows, rewinds

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Progress = Callable[[str], None]

#: Connection id of the results database (schema ``recon``); override with RECON_RESULTS_CONN_ID.
DEFAULT_RESULTS_CONN_ID = "postgres_recon"


def results_conn_id() -> str:
    import os

    return os.environ.get("RECON_RESULTS_CONN_ID", DEFAULT_RESULTS_CONN_ID)


def default_data_dir() -> str:
    import os

    from recon.spark import _state_dir

    return os.environ.get("RECON_DATA_DIR") or os.path.join(_state_dir(), "data")


def _noop(_: str) -> None:
    return None


@contextlib.contextmanager
def results_db() -> Iterator[Any]:
    import psycopg2

    conn = postgres_connection(results_conn_id())
    pg = psycopg2.connect(connect_timeout=15, **conn.psycopg2_kwargs())
    try:
        yield pg
    finally:
        pg.close()


@contextlib.contextmanager
def sink_db(cfg: PipelineConfig) -> Iterator[Any]:
    import psycopg2

    conn = postgres_connection(cfg.sink.connection)
    pg = psycopg2.connect(connect_timeout=15, **conn.psycopg2_kwargs())
    try:
        yield pg
    finally:
        pg.close()


# --- step 1 -------------------------------------------------------------------------------------


def snapshot_offsets(
    cfg: PipelineConfig, run_id: str, *, now: float | None = None, progress: Progress = _noop
) -> store.RunRecord:
    """Take (or reuse) the run's snapshot.

    :param cfg: the pipeline.
    :param run_id: the run's id (Airflow's run id, or one the CLI makes).
    :param now: snapshot time in epoch seconds, for the settle time (default: now).
    :param progress: called with a line per step.
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
        kafka = kafka_connection(cfg.kafka.connection)
        # The sink first: every row it sees was written from a record that is in the log by
        # the time Kafka is asked, so no row of a record past the snapshot becomes a phantom.
        with sink_db(cfg) as sink_pg:
            table = inspect_sink(sink_pg, cfg.sink, cfg.name)
            sink = (
                take_sink_position(
                    sink_pg, table.identifier(), cfg.sink.ingest_seq_column, base.sink_position
                )
                if cfg.sink.ingest_seq_column
                else None
            )
        snapshot_time = time.time() if now is None else now
        try:
            offsets = take_offsets(
                kafka.config, cfg.kafka.topic, cfg.kafka.consumer_group, cfg.settle_seconds,
                now=snapshot_time,
            )  # fmt: skip
        except KafkaAuthFailed as exc:
            raise KafkaAuthFailed(
                f"{kafka.where(cfg.name)}: {scrub(str(exc), kafka.config)}"
            ) from None
        start = cfg.kafka.start_offsets or "earliest"
        windows = plan_windows(offsets, base.watermarks, start)
        store.record_snapshot(
            pg,
            pipeline=cfg.name,
            run_id=run_id,
            semantics=cfg.semantics,
            snapshot_at=datetime.fromtimestamp(snapshot_time, UTC),
            windows=windows,
            base=base,
            sink=sink,
        )
        record = store.find_run(pg, cfg.name, run_id)
    assert record is not None
    progress(
        f"run {run_id}: window of {sum(w.window_to - w.read_from for w in windows)} offsets in "
        f"{len(windows)} partitions" + (" (rewind seen)" if any(w.rewound for w in windows) else "")
    )
    return record


def _require_record(cfg: PipelineConfig, run_id: str) -> store.RunRecord:
    with results_db() as pg:
        record = store.find_run(pg, cfg.name, run_id)
    if record is None:
        raise store.RunNotFound(
            f"pipeline '{cfg.name}': run '{run_id}' has no offset snapshot yet: "
            "run snapshot_offsets first"
        )
    return record


# --- step 2 -------------------------------------------------------------------------------------


#: What step 2 reads per partition: ``committed`` the window ``[from, to)`` and ``pending``
#: ``[to, LSO)``, both read_committed; ``inflight`` ``[LSO, high watermark)`` read_uncommitted:
#: records of open transactions and the committed records behind them, which a consumer reading
#: uncommitted may have written already. Their sink rows are pending, never phantoms.
PARTS = ("committed", "pending", "inflight")


def _ranges(windows: list[PartitionWindow], part: str) -> list[OffsetRange]:
    if part == "committed":
        return [OffsetRange(w.topic, w.partition, w.read_from, w.window_to) for w in windows]
    if part == "inflight":
        return [
            OffsetRange(w.topic, w.partition, max(w.pending_to, w.read_from), w.high_watermark)
            for w in windows
        ]
    return [OffsetRange(w.topic, w.partition, w.window_to, w.pending_to) for w in windows]


def _read_records(
    spark: SparkSession,
    cfg: PipelineConfig,
    ranges: list[OffsetRange],
    isolation_level: str = "read_committed",
) -> DataFrame:
    from recon import schemas

    kafka = kafka_connection(cfg.kafka.connection)
    raw = read_kafka_ranges(
        spark, kafka, ranges, isolation_level=isolation_level,
        include_headers=cfg.kafka.message_id.kind == "header",
    )  # fmt: skip
    if raw is None:
        return spark.createDataFrame([], schemas.WINDOW)
    return extract_message_ids(raw, cfg.kafka.message_id)


def snapshot_topic(
    cfg: PipelineConfig,
    run_id: str,
    spark: SparkSession | None,
    *,
    data_dir: str | None = None,
    progress: Progress = _noop,
) -> dict[str, str]:
    """Read the run's window and pending records into Parquet.

    A pipeline with ``engine: local`` is read by ``recon.local.engine`` (no Spark needed).

    :returns: the Parquet paths by part (``committed``, ``pending``).
    """
    if cfg.engine == "local":
        from recon.local import engine as local_engine

        with failure_recorded(cfg, run_id, progress):
            return local_engine.snapshot_topic(cfg, run_id, data_dir=data_dir, progress=progress)
    assert spark is not None, "the Spark engine needs a SparkSession"
    record = _require_record(cfg, run_id)
    data_dir = data_dir or default_data_dir()
    paths = {}
    with failure_recorded(cfg, run_id, progress):
        for part in PARTS:
            path = window_path(data_dir, cfg.name, run_id, part)
            isolation = "read_uncommitted" if part == "inflight" else "read_committed"
            records = _read_records(spark, cfg, _ranges(record.windows, part), isolation)
            records.write.mode("overwrite").parquet(path)
            paths[part] = path
    progress(f"run {run_id}: window written to {paths['committed']}")
    return paths


# --- step 3 -------------------------------------------------------------------------------------


@dataclass
class RunSummary:
    """What a run found, as printed by the CLI and returned to Airflow (small, JSON-friendly)."""

    pipeline: str
    run_id: str
    semantics: str
    status: str
    counts: dict[str, int]
    contract_passed: bool
    violations: list[dict[str, Any]]
    windows: list[dict[str, Any]]
    rewinds: list[dict[str, Any]]
    discrepancies: int
    sink_rows_scanned: int
    duration_seconds: float
    ledger_path: str
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    validation_url: str | None = None


def judged_outcome(
    cfg: PipelineConfig,
    counts: dict[str, int],
    *,
    ledger_path: str,
    sink_rows_scanned: int,
    duration_seconds: float,
) -> store.RunOutcome:
    """What a run commits besides its discrepancy rows: its counts judged by the claimed contract.

    Both engines commit through this, so a pipeline's verdicts read the same whichever judged it.
    """
    contract = evaluate_contract(cfg.semantics, counts, cfg.tolerances, cfg.idempotent_producer)
    # Same keys as the checkpoint's failures (recon.validation), which replace these.
    violations = [
        {"verdict": v.verdict, "rule": v.verdict, "observed": v.count, "allowed": v.allowed,
         "reason": v.reason}
        for v in contract.violations
    ]  # fmt: skip
    return store.RunOutcome(
        status="passed" if contract.passed else "failed",
        counts=counts,
        contract_passed=contract.passed,
        violations=violations,
        ledger_path=ledger_path,
        sink_rows_scanned=sink_rows_scanned,
        duration_seconds=duration_seconds,
        topic_duplicates=counts.get(Verdict.TOPIC_DUPLICATE, 0),
    )


def run_summary(
    cfg: PipelineConfig,
    record: store.RunRecord,
    outcome: store.RunOutcome,
    discrepancies: int,
    samples: dict[str, list[dict[str, Any]]],
) -> RunSummary:
    """The summary of a committed run, as the CLI prints it and Airflow's XCom carries it."""
    return RunSummary(
        pipeline=cfg.name,
        run_id=record.run_id,
        semantics=cfg.semantics,
        status=outcome.status,
        counts=dict(outcome.counts),
        contract_passed=outcome.contract_passed,
        violations=outcome.violations,
        windows=[w.as_dict() for w in record.windows],
        rewinds=rewinds(record.windows),
        discrepancies=discrepancies,
        sink_rows_scanned=outcome.sink_rows_scanned,
        duration_seconds=round(outcome.duration_seconds, 3),
        ledger_path=outcome.ledger_path,
        samples=samples,
    )


def _gapped_windows(windows: list[PartitionWindow], seen: DataFrame) -> list[PartitionWindow]:
    """The partitions whose committed records do not fill every offset of ``[from, pending_to)``.

    Offsets are unique per record, so a partition whose read_committed records number exactly
    ``pending_to - from`` holds no aborted record and no transaction marker in that range: the
    read_uncommitted pass can skip it. The counts come from the window already on disk (one
    small aggregate, eight rows), never from offset arithmetic alone.
    """
    from pyspark.sql import functions as F

    counted = {
        (r["topic"], r["partition"]): int(r["n"])
        for r in seen.groupBy("topic", "partition").agg(F.count(F.lit(1)).alias("n")).collect()
    }
    return [
        w for w in windows
        if w.pending_to > w.read_from
        and counted.get((w.topic, w.partition), 0) < w.pending_to - w.read_from
    ]  # fmt: skip


def _uncommitted_records(
    spark: SparkSession, cfg: PipelineConfig, windows: list[PartitionWindow], seen: DataFrame
) -> DataFrame:
    """Records visible read_uncommitted but not read_committed: aborted transactions."""
    from pyspark.sql import functions as F

    ranges = [OffsetRange(w.topic, w.partition, w.read_from, w.pending_to) for w in windows]
    every = _read_records(spark, cfg, ranges, isolation_level="read_uncommitted")
    committed_positions = seen.select("topic", "partition", "offset")
    return (
        every.filter(F.col("message_id").isNotNull())
        .join(committed_positions, ["topic", "partition", "offset"], "left_anti")
        .select("message_id", "topic", "partition", "offset")
    )


def _sink_rows_for_run(
    spark: SparkSession, cfg: PipelineConfig, record: store.RunRecord
) -> DataFrame:
    conn = postgres_connection(cfg.sink.connection)
    rows = record.sink_range if cfg.sink.ingest_seq_column else None
    with sink_db(cfg) as pg:
        table = inspect_sink(pg, cfg.sink, cfg.name)
        query = sink_query(pg, cfg.sink, table, rows)
    if rows is not None and rows.seq_to is None:
        # The table was empty at snapshot time: nothing to read for this run.
        from recon import schemas

        return spark.createDataFrame([], schemas.SINK_ROWS)
    if rows is None:
        return read_sink_rows(spark, conn, query, None, None)
    return read_sink_rows(spark, conn, query, rows.lowest, rows.seq_to)


def _only_changed_ids(rows: DataFrame, ledger: DataFrame | None) -> tuple[DataFrame, Any]:
    """Full-scan sinks (no ingest sequence): keep the rows of ids whose count changed since the
    ledger, and zero their ledger count (all their rows are passed again)."""
    from pyspark.sql import functions as F

    if ledger is None:
        return rows, None
    counts = rows.groupBy("message_id").agg(F.count(F.lit(1)).alias("_now"))
    known = ledger.select("message_id", F.col("sink_count").alias("_before"))
    changed = (
        counts.join(known, "message_id", "left")
        .filter(F.col("_before").isNull() | (F.col("_now") != F.col("_before")))
        .select("message_id")
    )
    kept = rows.join(changed, "message_id", "left_semi").unionByName(
        rows.filter(F.col("message_id").isNull())
    )
    adjusted = ledger.join(
        changed.withColumn("_changed", F.lit(True)), "message_id", "left"
    ).select(
        *[
            F.when(F.col("_changed"), F.lit(0).cast("long")).otherwise(F.col(c)).alias(c)
            if c == "sink_count"
            else F.col(c)
            for c in ledger.columns
        ]
    )
    return kept, adjusted


DISCREPANCY_SAMPLE = 20


class _Samples:
    """The first :data:`DISCREPANCY_SAMPLE` discrepancy rows per verdict (and of the
    ``topic_duplicate`` flag) in (partition, first offset, messageId) order, nulls first as
    Spark sorts, kept while the rows stream past."""

    _KEEP = DISCREPANCY_SAMPLE * 10

    def __init__(self, verdicts: list[str]) -> None:
        self.verdicts = verdicts
        self.kept: dict[str, list[tuple[Any, ...]]] = {v: [] for v in verdicts}

    @staticmethod
    def _key(row: tuple[Any, ...]) -> tuple[Any, ...]:
        _, _, _, mid, _, partition, _, first, *_ = row
        return (partition is not None, partition or 0, first is not None, first or 0,
                mid is not None, mid or "")  # fmt: skip

    def _keep(self, verdict: str, row: tuple[Any, ...]) -> None:
        kept = self.kept.get(verdict)
        if kept is None:
            return
        kept.append(row)
        if len(kept) > self._KEEP:
            kept.sort(key=self._key)
            del kept[DISCREPANCY_SAMPLE:]

    def watch(self, rows: Iterator[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
        for row in rows:
            self._keep(row[2], row)
            if row[10]:
                self._keep(Verdict.TOPIC_DUPLICATE.value, row)
            yield row

    def result(self) -> dict[str, list[dict[str, Any]]]:
        out = {}
        for verdict in self.verdicts:
            rows = sorted(self.kept[verdict], key=self._key)[:DISCREPANCY_SAMPLE]
            out[verdict] = [
                {"message_id": r[3], "topic": r[4], "partition": r[5], "offsets": r[6],
                 "sink_keys": r[8][:5], "sink_count": r[9]}
                for r in rows
            ]  # fmt: skip
        return out


def redact(text: str, cfg: PipelineConfig) -> str:
    """``text`` with every secret of the pipeline's connections (and the results database's)
    masked: errors are stored in ``recon.runs`` and printed, never with a password in them."""
    from recon.errors import ConnectionNotFound

    secrets: list[str] = []
    try:
        kafka = kafka_connection(cfg.kafka.connection)
        text = scrub(text, kafka.config)
    except ConnectionNotFound:
        pass
    for conn_id in (cfg.sink.connection, results_conn_id()):
        try:
            password = postgres_connection(conn_id).password
        except ConnectionNotFound:
            continue
        if password:
            secrets.append(password)
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def _mark_error(cfg: PipelineConfig, run_id: str, exc: Exception, progress: Progress) -> None:
    """Record the failure on the run's row when the results database can take it; the error
    that failed the run is what the caller raises either way."""
    import psycopg2

    try:
        with results_db() as pg:
            store.mark_error(pg, cfg.name, run_id, redact(f"{type(exc).__name__}: {exc}", cfg))
    except psycopg2.Error as unreachable:
        progress(f"run {run_id}: could not record the error: {first_line(unreachable)}")


@contextlib.contextmanager
def failure_recorded(
    cfg: PipelineConfig, run_id: str, progress: Progress = _noop
) -> Iterator[None]:
    """Any exception inside marks the run ``error`` with its (redacted) message, then propagates:
    a run that failed is never left ``running``."""
    try:
        yield
    except Exception as exc:
        _mark_error(cfg, run_id, exc, progress)
        raise


def reconcile_run(
    cfg: PipelineConfig,
    run_id: str,
    spark: SparkSession | None,
    *,
    data_dir: str | None = None,
    progress: Progress = _noop,
) -> RunSummary:
    """Judge every message of the run and commit the results exactly once.

    A pipeline with ``engine: local`` is judged by ``recon.local.engine`` (no Spark needed).

    :raises store.ConcurrentRunError: another run advanced the pipeline meanwhile.
    """
    if cfg.engine == "local":
        from recon.local import engine as local_engine

        return local_engine.reconcile_run(cfg, run_id, data_dir=data_dir, progress=progress)
    assert spark is not None, "the Spark engine needs a SparkSession"
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from recon import ledger as ledger_store
    from recon.engines.spark import reconcile
    from recon.rules.run import next_ledger

    started = time.monotonic()
    record = _require_record(cfg, run_id)
    data_dir = data_dir or default_data_dir()
    with results_db() as pg:
        store.mark_running(pg, cfg.name, run_id)
    try:
        window = spark.read.parquet(window_path(data_dir, cfg.name, run_id, "committed"))
        readable = spark.read.parquet(window_path(data_dir, cfg.name, run_id, "pending"))
        inflight = spark.read.parquet(window_path(data_dir, cfg.name, run_id, "inflight"))
        pending = readable.unionByName(inflight)
        base_entries = ledger_store.read_manifest(spark, record.base_ledger_path)
        sink_rows = _sink_rows_for_run(spark, cfg, record).persist(StorageLevel.MEMORY_AND_DISK)
        if cfg.sink.ingest_seq_column:
            carried = spark_carried_pending(spark, data_dir, cfg, record, base_entries, progress)
            facts = [window, pending, sink_rows, carried]
            ledger = ledger_store.ledger_for(spark, base_entries, facts, record.fact_bound)
        else:
            # A sink scanned whole: every id's row count is compared with its ledger entry.
            ledger = ledger_store.full_ledger(spark, base_entries)
            sink_rows, ledger = _only_changed_ids(sink_rows, ledger)
        if ledger is not None:
            ledger = ledger.persist(StorageLevel.MEMORY_AND_DISK)
        unverifiable = [
            (w.topic, w.partition, w.window_from, w.removed_to)
            for w in record.windows
            if w.unverifiable
        ]
        ends = partition_ends(record.windows)
        rules, counts = reconcile(
            spark, window, sink_rows, ledger, pending, None, unverifiable, ends
        )
        progress(f"run {run_id}: verdicts counted at {time.monotonic() - started:.1f} s")
        # Only the records read committed count: the in-flight ones lie past the range.
        committed_read = window.unionByName(readable)
        gapped = (
            _gapped_windows(record.windows, committed_read)
            if counts.get(Verdict.PHANTOM, 0) > 0
            else []
        )
        if gapped:
            progress(
                f"run {run_id}: {counts[Verdict.PHANTOM]} phantoms: read_uncommitted pass over "
                f"{len(gapped)} partition(s) with offset gaps"
            )
            aborted = _uncommitted_records(spark, cfg, gapped, committed_read).persist(
                StorageLevel.MEMORY_AND_DISK
            )
            rules.release()
            rules, counts = reconcile(
                spark, window, sink_rows, ledger, pending, aborted, unverifiable, ends
            )
        results = rules.frame("results").persist(StorageLevel.MEMORY_AND_DISK)
        next_ledger(rules, run_id)
        ledger_path = ledger_store.write_version(
            spark,
            f"{data_dir.rstrip('/')}/ledger/{cfg.name}",
            f"{_safe(run_id)}-{uuid.uuid4().hex[:8]}",
            base_entries,
            rules.frame("ledger_next"),
        )
        results.write.mode("overwrite").parquet(results_path(data_dir, cfg.name, run_id))
        progress(f"run {run_id}: ledger and results written at {time.monotonic() - started:.1f} s")

        sink_scanned = sink_rows.count()
        # A late delivery is written too: it corrects an earlier run's ``lost`` (recon.store).
        flagged = results.filter(
            (F.col("verdict") != Verdict.DELIVERED.value)
            | F.col("topic_duplicate")
            | F.coalesce(F.col("detail").startswith(LATE_DELIVERY), F.lit(False))
        )
        rows: Iterator[tuple[Any, ...]] = (
            (
                cfg.name, run_id, r["verdict"], r["message_id"], r["topic"], r["partition"],
                list(r["offsets"] or []), r["first_offset"], list(r["sink_keys"] or []),
                r["sink_count"], r["topic_duplicate"], r["detail"],
            )
            for r in flagged.toLocalIterator()
        )  # fmt: skip
        # Samples are picked from the discrepancy rows as they stream to the results database:
        # no extra Spark job per verdict.
        sampler = _Samples([v for v, n in counts.items() if n and v != Verdict.DELIVERED])
        rows = sampler.watch(rows)
        outcome = judged_outcome(
            cfg, counts, ledger_path=ledger_path, sink_rows_scanned=sink_scanned,
            duration_seconds=time.monotonic() - started,
        )  # fmt: skip
        with results_db() as pg:
            written = store.commit_run(pg, record=record, outcome=outcome, discrepancies=rows)
        results.unpersist()
        rules.release()
        sink_rows.unpersist()
        if ledger is not None:
            ledger.unpersist()
    except Exception as exc:
        _mark_error(cfg, run_id, exc, progress)
        raise
    progress(
        f"run {run_id}: committed {written} discrepancy rows in {outcome.duration_seconds:.1f} s"
    )
    return run_summary(cfg, record, outcome, written, sampler.result())


def validate_step(
    cfg: PipelineConfig,
    run_id: str,
    spark: SparkSession,
    *,
    data_dir: str | None = None,
    progress: Progress = _noop,
) -> Any:
    """Run the Great Expectations checkpoint of the claimed semantic over the run's results and
    record its decision and Data Docs link on ``recon.runs``.

    :returns: the ``recon.validation.ValidationOutcome``.
    """
    from recon.validation import record_validation, validate_run

    _require_record(cfg, run_id)
    data_dir = data_dir or default_data_dir()
    with failure_recorded(cfg, run_id, progress):
        results = spark.read.parquet(results_path(data_dir, cfg.name, run_id))
        outcome = validate_run(spark, results, cfg, run_id)
        with results_db() as pg:
            record_validation(pg, cfg.name, run_id, outcome)
    progress(
        f"run {run_id}: validation {'passed' if outcome.passed else 'FAILED'}; "
        f"Data Docs: {outcome.data_docs_path}"
    )
    return outcome


def run_pipeline(
    cfg: PipelineConfig,
    run_id: str,
    spark: SparkSession,
    *,
    data_dir: str | None = None,
    progress: Progress = _noop,
) -> RunSummary:
    """Every step, as ``recon run`` does: snapshot, read, reconcile, validate."""
    snapshot_offsets(cfg, run_id, progress=progress)
    snapshot_topic(cfg, run_id, spark, data_dir=data_dir, progress=progress)
    summary = reconcile_run(cfg, run_id, spark, data_dir=data_dir, progress=progress)
    outcome = validate_step(cfg, run_id, spark, data_dir=data_dir, progress=progress)
    summary.contract_passed = outcome.passed
    summary.status = "passed" if outcome.passed else "failed"
    summary.violations = outcome.failures
    summary.validation_url = outcome.data_docs_path
    return summary
