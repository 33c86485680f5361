"""Steps 2 and 3 of a run on Spark (``recon.engine`` says what each step does).

:func:`snapshot_topic` reads the window's parts with Spark's Kafka source into Parquet;
:func:`reconcile_run` judges them with the rules (``recon.engines.spark``), writes the ledger
version and the results, and commits through ``recon.store``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from recon import store
from recon.config import PipelineConfig
from recon.connections import kafka_connection, postgres_connection
from recon.details import LATE_DELIVERY
from recon.kafka_read import OffsetRange, extract_message_ids, part_ranges, read_kafka_ranges
from recon.outcome import (
    DISCREPANCY_SAMPLE,
    RunSummary,
    judged_outcome,
    mark_error,
    require_record,
    run_summary,
)
from recon.paths import _safe, results_path, window_path
from recon.pending import partition_ends, removed_ranges, spark_carried_pending
from recon.services import Progress, default_data_dir, noop, results_db, sink_db
from recon.sink_read import inspect_sink, read_sink_rows, sink_query
from recon.verdicts import Verdict
from recon.window import PartitionWindow

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: The parts step 2 reads (``recon.kafka_read.part_ranges`` says which offsets each holds).
PARTS = ("committed", "pending", "inflight")


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
    spark: SparkSession,
    *,
    data_dir: str | None = None,
    progress: Progress = noop,
) -> dict[str, str]:
    """Read the run's window parts into Parquet (``recon.engine.snapshot_topic`` records a
    failure on the run).

    :returns: the Parquet paths by part (``committed``, ``pending``).
    """
    record = require_record(cfg, run_id)
    data_dir = data_dir or default_data_dir()
    paths = {}
    for part in PARTS:
        path = window_path(data_dir, cfg.name, run_id, part)
        isolation = "read_uncommitted" if part == "inflight" else "read_committed"
        records = _read_records(spark, cfg, part_ranges(record.windows, part), isolation)
        records.write.mode("overwrite").parquet(path)
        paths[part] = path
    progress(f"run {run_id}: window written to {paths['committed']}")
    return paths


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


def reconcile_run(
    cfg: PipelineConfig,
    run_id: str,
    spark: SparkSession,
    *,
    data_dir: str | None = None,
    progress: Progress = noop,
) -> RunSummary:
    """Judge every message of the run and commit the results exactly once.

    :raises store.ConcurrentRunError: another run advanced the pipeline meanwhile.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from recon import ledger as ledger_store
    from recon.engines.spark import reconcile
    from recon.rules.run import next_ledger

    started = time.monotonic()
    record = require_record(cfg, run_id)
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
        unverifiable = removed_ranges(record.windows)
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
        mark_error(cfg, run_id, exc, progress)
        raise
    progress(
        f"run {run_id}: committed {written} discrepancy rows in {outcome.duration_seconds:.1f} s"
    )
    return run_summary(cfg, record, outcome, written, sampler.result())
