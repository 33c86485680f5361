"""Step 3 of a run on Spark and its validation (``recon.run.steps`` says what each step does;
step 2 is ``recon.engines.spark_snapshot``): :class:`SparkRunIO` is the run's IO on Spark for
the one driver of step 3 (``recon.engines.driver``): the rules run as Spark SQL
(``recon.engines.spark``); :func:`validate` checks the results with the pipeline's suite.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from recon.config.connections import kafka_connection, postgres_connection
from recon.engines.plan import PlannedRun
from recon.engines.spark_snapshot import (
    read_records,
    reads_on_driver,
    sink_copy_dir,
    source_copy_dir,
)
from recon.ledger.versions import local_path
from recon.read.kafka_spark import read_window
from recon.read.ranges import window_ranges
from recon.read.sink import read_sink_rows, sink_query
from recon.read.sink_copy import is_copied, read_sink_copy, run_sink_range
from recon.read.source import SourceTimes
from recon.read.source_copy import ROWS_FILE as SOURCE_ROWS_FILE
from recon.read.source_copy import copied_for, copy_source_rows
from recon.run.outcome import RunSummary
from recon.run.paths import (
    is_local,
    ledger_dir,
    publish_results,
    results_path,
    version_name,
    window_path,
)
from recon.run.services import Progress, noop, sink_db, source_db
from recon.snapshot.window import PartitionWindow
from recon.spark import persist

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def validate(plan: PlannedRun, *, spark: SparkSession | None) -> Any:
    """Validate the run's results Parquet with the pipeline's suite: on Spark, or on pandas for
    a run whose files the driver reads (:func:`reads_on_driver`).

    :returns: the ``recon.validation.ValidationOutcome``.
    """
    from recon.validation import validate_results_file, validate_run

    cfg, run_id = plan.cfg, plan.run_id
    path = results_path(plan.data_dir, cfg.name, run_id)
    if reads_on_driver(plan):
        return validate_results_file(cfg, run_id, path)
    if spark is None:
        raise ValueError(f"pipeline '{cfg.name}': Spark validates this run: no session")
    return validate_run(spark, spark.read.parquet(path), cfg, run_id)


def _without_rows(directory: str) -> bool:
    """Whether the Parquet files Spark wrote into ``directory`` hold no row (their footers say;
    False when there is none to ask)."""
    import glob

    import pyarrow.parquet as pq

    files = glob.glob(f"{glob.escape(directory)}/*.parquet")
    return bool(files) and all(pq.read_metadata(f).num_rows == 0 for f in files)


def _sink_rows_for_run(spark: SparkSession, plan: PlannedRun) -> DataFrame:
    cfg = plan.cfg
    conn = postgres_connection(cfg.sink.connection)
    rows, empty = run_sink_range(cfg, plan.record)
    with sink_db(cfg) as pg:  # to quote the identifiers
        query = sink_query(pg, cfg.sink, plan.catalog.sink, rows, cfg.payload, cfg.order)
    if empty:
        from recon.model import schemas

        return spark.createDataFrame([], schemas.SINK_ROWS)
    if rows is None:
        return read_sink_rows(spark, conn, query, None, None)
    return read_sink_rows(spark, conn, query, rows.lowest, rows.seq_to)


class SparkRunIO:
    """:class:`recon.engines.run_io.RunIO` on Spark: the window's parts from Parquet, the sink
    rows and a source's rows from the copies step 2 made (over JDBC where the data directory is
    not on this machine), the ledger versions through ``recon.ledger.spark``, the
    read_uncommitted pass with Spark tasks (``recon.read.kafka_spark.read_window``), the
    discrepancy rows streamed to the driver row by row.
    """

    def __init__(self, spark: SparkSession, plan: PlannedRun, progress: Progress) -> None:
        from recon.engines.spark import SparkRules
        from recon.ledger.spark import SparkEntryStore

        record = plan.record
        self.spark, self.plan, self.cfg, self.record = spark, plan, plan.cfg, record
        self.data_dir, self.progress = plan.data_dir, progress
        # The results are written once, computing them (keeping them cost more:
        # bench/engine_changes.md); their counts and the discrepancies read the file back (a run
        # with offset gaps counts them before the write too: recon.engines.driver).
        self.rules = SparkRules(spark)
        self.entry_store = SparkEntryStore(spark, expected_ids=record.fact_bound)
        self._cached: list[DataFrame] = []

    def _cache(self, frame: DataFrame) -> DataFrame:
        # at recon.spark.CACHE_LEVEL (deserialised: see there why)
        self._cached.append(persist(frame))
        return frame

    def part(self, part: str) -> DataFrame | None:
        path = window_path(self.data_dir, self.cfg.name, self.record.run_id, part)
        # A part without rows (most windows' pending and in-flight parts) is the rules' empty
        # input, which Spark prunes while planning; read, it would cost a job per step that
        # reads it before AQE found it empty.
        if is_local(path) and _without_rows(local_path(path)):
            return None
        return self.spark.read.parquet(path)

    def sink_rows(self) -> DataFrame:
        if is_local(self.data_dir):
            directory = sink_copy_dir(self.data_dir, self.cfg.name, self.record.run_id)
            if is_copied(directory):
                # Parquet on this disk: read again where read twice, never cached.
                return read_sink_copy(self.spark, directory)
        if self.cfg.sink.is_kafka:
            # A Kafka sink's rows exist only as step 2's copy of the target's records.
            from recon.errors import ReconError

            raise ReconError(
                f"pipeline '{self.cfg.name}': sink.kind kafka: the target's records are copied "
                "in step 2 into a data directory on the driver's disk; this run has no such copy"
            )
        # A data directory off this machine (or a window read before step 2 copied the sink
        # rows): over JDBC, read once.
        return self._cache(_sink_rows_for_run(self.spark, self.plan))

    def source_rows(self, times: SourceTimes) -> DataFrame:
        from recon.read.source import read_source_rows, source_query

        assert self.cfg.source is not None
        if self.cfg.source.is_topic:
            return self._topic_source_rows(times)
        if is_local(self.data_dir):
            directory = source_copy_dir(self.data_dir, self.cfg.name, self.record.run_id)
            if not copied_for(directory, times):
                # A window read before the pipeline declared its source.
                n = copy_source_rows(self.cfg, times, self.plan.catalog.source_time_type, directory)
                self.progress(
                    f"run {self.record.run_id}: {n} rows of source {self.cfg.source.name}"
                )
            return self.spark.read.parquet(f"{directory}/{SOURCE_ROWS_FILE}")
        time_type = self.plan.catalog.source_time_type
        with source_db(self.cfg) as pg:
            if time_type is None:  # declared since step 1: asked now
                from recon.read.source import inspect_source

                time_type = inspect_source(pg, self.cfg).time_type
            query = source_query(pg, self.cfg, times, time_type)
        conn = postgres_connection(self.cfg.source.connection)
        return self._cache(read_source_rows(self.spark, conn, query))

    def _topic_source_rows(self, times: SourceTimes) -> DataFrame:
        from recon.read.source_topic import source_rows_sql, source_topic_ranges, topic_spec
        from recon.rules.render import for_dialect

        spec = topic_spec(self.cfg)
        assert spec.message_id is not None
        records = read_window(
            self.spark, kafka_connection(spec.connection), source_topic_ranges(self.cfg, times),
            spec.message_id, with_time=True,
        )  # fmt: skip
        # Read once: the rules read the source rows twice (their ids, and the unsourced check).
        self._cache(records).createOrReplaceTempView("recon_source_records")
        return self.spark.sql(for_dialect(source_rows_sql("recon_source_records", times), "spark"))

    def results_at(self, path: str) -> DataFrame | None:
        from pyspark.errors import AnalysisException

        try:
            return self.spark.read.parquet(path)
        except AnalysisException:  # no such directory
            return None

    def read_every(self, windows: list[PartitionWindow]) -> DataFrame:
        ranges = window_ranges(windows)
        return read_records(self.spark, self.plan, ranges, isolation_level="read_uncommitted")

    def write_version(self, base_entries: list[str], has_ledger: bool) -> str:
        from recon.ledger.versions import write_version

        results = self.rules.relation("results")
        out = results_path(self.data_dir, self.cfg.name, self.record.run_id)
        here = is_local(out)
        # On a local file system, as the local engine does: the results are written once, into
        # the new ledger version, where they stand for the entries of the messages new to the
        # ledger, and linked as the run's results; the version's delta holds the entries of the
        # messages the ledger knew. Elsewhere the version holds every entry and the results are
        # written again.
        if here:
            delta = self.rules.relation("ledger_known") if has_ledger else None
        else:
            delta = self.rules.relation("ledger_next")
        path, written = write_version(
            self.rules, self.entry_store, ledger_dir(self.data_dir, self.cfg.name),
            version_name(self.record.run_id), base_entries,
            delta=delta, results=(results, self.record.run_id) if here else None,
        )  # fmt: skip
        if written is not None:
            publish_results(written, out)
        else:
            results.write.mode("overwrite").parquet(out)
        return path

    def discrepancy_rows(self) -> Iterator[tuple[Any, ...]]:
        pipeline, run_id = self.cfg.name, self.record.run_id
        return (
            (pipeline, run_id, r[0], r[1], r[2], r[3], list(r[4] or []), r[5], list(r[6] or []),
             *r[7:])
            for r in self.rules.relation("discrepancies").toLocalIterator()
        )  # fmt: skip

    def close(self) -> None:
        self.rules.release()
        for frame in self._cached:
            frame.unpersist()
        self._cached.clear()


def reconcile_run(
    plan: PlannedRun, *, spark: SparkSession, progress: Progress = noop
) -> RunSummary:
    """Judge every message of the run on Spark and commit the results exactly once
    (``recon.engines.driver.reconcile_run``).

    :raises store.ConcurrentRunError: another run advanced the pipeline meanwhile.
    """
    from recon.engines import driver

    return driver.reconcile_run(plan, functools.partial(SparkRunIO, spark), progress=progress)
