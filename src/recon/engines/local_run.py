"""The single-machine engine (``engine: local``): the same steps and verdicts as the Spark
engine, without a JVM; here steps 2 and 3 of a run (``recon.run.steps``), same results and commit.

A pipeline declares ``engine: local`` when its windows fit one machine (tens of millions of
messages on a few GiB). The steps keep the Spark engine's contracts (``recon.run.steps``):

* :mod:`recon.read.kafka_local` reads exact offset ranges with confluent-kafka in parallel
  worker processes (one per core, partitions spread by size), the messageIds taken out by
  :mod:`recon.read.message_ids` as the Spark engine's are;
* :mod:`recon.read.sink_arrow` copies the run's sink rows (and a declared source's rows) out of
  PostgreSQL (``COPY``) while the workers read Kafka;
* the verdicts are the rules of :mod:`recon.rules`, run by :mod:`recon.engines.duckdb`;
* :mod:`recon.ledger.local` reads and writes the same ledger versions (manifests of Parquet
  entry directories, ``recon.ledger.versions``) as :mod:`recon.ledger.spark`, so a pipeline
  can move between engines.

:func:`snapshot_topic` reads the window and the pending records with one Kafka reader process
per core while the sink's rows for the run stream out of PostgreSQL, all into Parquet under the
run's window directory, made visible in one rename. :class:`LocalRunIO` is the run's IO on
one machine for the one driver of step 3 (``recon.engines.driver``): the rules run in DuckDB
(``recon.engines.duckdb``), the ledger store is ``recon.ledger.local``.

Nothing here imports pyspark or Airflow.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import time
import uuid
from typing import Any

from recon import store
from recon.config.connections import KafkaConnection, kafka_connection
from recon.engines.copies import row_copies
from recon.engines.duckdb_connection import connect
from recon.engines.plan import PlannedRun
from recon.ledger.local import LocalEntryStore
from recon.ledger.versions import local_path, write_version
from recon.read.kafka_local.pool import (
    Read,
    collect,
    read_in_process,
    read_ranges,
)
from recon.read.message_ids import write_empty_part
from recon.read.ranges import part_ranges, window_ranges
from recon.read.source import SourceTimes
from recon.read.source_copy import copied_for, copy_source_rows
from recon.rules.render import literal as _literal
from recon.run.outcome import RunSummary
from recon.run.paths import (
    ledger_dir,
    pipeline_windows,
    publish_results,
    remove_tree,
    results_path,
    spill_dir,
    version_name,
    window_path,
)
from recon.run.services import Progress, noop
from recon.snapshot.window import PartitionWindow

PARTS = ("committed", "pending", "inflight", "sink")
#: Read committed, except the in-flight records past the last stable offset
#: (``recon.read.ranges.part_ranges``).
_ISOLATION = {"committed": "read_committed", "pending": "read_committed",
              "inflight": "read_uncommitted"}  # fmt: skip


def _run_dir(data_dir: str, pipeline: str, run_id: str) -> str:
    return os.path.dirname(window_path(data_dir, pipeline, run_id, "committed"))


def _wait(pipeline: str, readers: Read, kafka: KafkaConnection) -> int:
    """The readers' record count; their failures name the pipeline and connection.

    :param kafka: the connection they read with.
    """
    return collect(readers, pipeline, kafka)


def snapshot_topic(plan: PlannedRun, *, progress: Progress = noop) -> dict[str, str]:
    """Read the run's window, pending records and sink rows (and a declared source's rows:
    ``recon.read.source``) into Parquet.

    A re-run rewrites them all; readers see either the old set or the new one.

    :returns: the Parquet directories by part (``committed``, ``pending``, ``sink``).
    """
    started = time.monotonic()
    cfg, run_id, data_dir = plan.cfg, plan.run_id, plan.data_dir
    final = _run_dir(data_dir, cfg.name, run_id)
    staging = f"{final}.tmp-{uuid.uuid4().hex[:8]}"
    kafka = plan.kafka
    window = window_ranges(plan.windows)
    offsets = sum(r.end - r.start for r in window)
    workers = plan.engine.readers
    # One decision for the whole window: its parts (committed, pending) are read side by side.
    in_process = read_in_process(window)
    how = "in this process" if in_process else f"with {workers} Kafka reader processes"
    progress(f"run {run_id}: reading {offsets} offsets {how}")
    # The sink rows (and a source's rows) stream out of PostgreSQL while the readers read Kafka.
    copies = row_copies(plan, f"{staging}/sink", f"{staging}/source")
    try:
        os.makedirs(staging)
        readers = {}
        for part, isolation in _ISOLATION.items():
            ranges = [r for r in part_ranges(plan.windows, part) if r.end > r.start]
            if not ranges:
                # Nearly always for inflight (no open transaction), often for pending (the group
                # committed everything): no reader process for nothing.
                write_empty_part(f"{staging}/{part}")
                continue
            readers[part] = read_ranges(
                dict(kafka.config), ranges, cfg.kafka.message_id, f"{staging}/{part}",
                isolation_level=isolation, workers=workers,
                with_time=cfg.sink.time_column is not None, payload=cfg.payload,
                order=cfg.order, in_process=in_process,
                expect=cfg.expect.fields() if cfg.expect is not None else (),
            )  # fmt: skip
        try:
            copies.start()
            read = dict.fromkeys(_ISOLATION, 0) | {
                p: _wait(cfg.name, r, kafka) for p, r in readers.items()
            }
            records_took = time.monotonic() - started
        finally:
            for r in readers.values():
                r.stop()
            copies.join()
        copied = copies.wait()
        if cfg.diverted is not None:
            from recon.read.dead_letters import topics_config, write_part

            write_part(
                plan.catalog.dead_letter_ranges, cfg.diverted, cfg.kafka.message_id,
                topics_config(cfg.diverted, kafka.config), f"{staging}/dead_letters",
            )  # fmt: skip
        open(f"{staging}/_SUCCESS", "w").close()
        if os.path.exists(final):
            remove_tree(final, pipeline_windows(data_dir, cfg.name))
        os.rename(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    took = copies.took
    source = (
        f", {copied['source']} source rows ({took['source']:.1f} s)" if "source" in copied else ""
    )
    progress(
        f"run {run_id}: {read['committed']} records, {read['pending']} pending, "
        f"{read['inflight']} in flight and {copied.get('sink', 0)} sink rows written to {final} in "
        f"{time.monotonic() - started:.1f} s (records {records_took:.1f} s, sink rows "
        f"{took.get('sink', 0):.1f} s{source}, side by side)"
    )
    return {part: f"{final}/{part}" for part in PARTS}


def _connect(data_dir: str, memory_limit: str | None) -> Any:
    spill = spill_dir(data_dir)
    os.makedirs(spill, exist_ok=True)
    # Bounded, so a window larger than memory spills instead of failing or swapping (bench P3
    # measures the engine's peak and its spill at the largest P1 window and at three times it).
    return connect(**{
        "temp_directory": spill, "preserve_insertion_order": False,
        "memory_limit": memory_limit,
    })  # fmt: skip


def _view(con: Any, name: str, directory: str) -> str:
    pattern = os.path.join(directory, "*.parquet").replace("'", "''")
    con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM read_parquet('{pattern}')")
    return name


def _discrepancy_file(
    con: Any, pipeline: str, run_id: str, flagged: str, path: str
) -> store.DiscrepancyFile:
    """The run's discrepancy rows as CSV for PostgreSQL's ``COPY``, written by DuckDB."""
    quoted_key = "'\"' || replace(replace(k, '\\', '\\\\'), '\"', '\\\"') || '\"'"
    target = path.replace("'", "''")
    con.execute(
        f"""COPY (
            SELECT {_literal(pipeline)}, {_literal(run_id)}, verdict, message_id, topic,
                   "partition", '{{' || array_to_string(offsets, ',') || '}}', first_offset,
                   '{{' || array_to_string(list_transform(sink_keys, k -> {quoted_key}), ',')
                       || '}}',
                   sink_count, topic_duplicate, detail
            FROM {flagged}
        ) TO '{target}' (FORMAT csv, HEADER false)"""
    )
    (rows,) = con.execute(f"SELECT count(*) FROM {flagged}").fetchone()
    return store.DiscrepancyFile(path, int(rows))


class LocalRunIO:
    """:class:`recon.engines.run_io.RunIO` on one machine: DuckDB views over the Parquet that
    :func:`snapshot_topic` wrote (the sink rows included), the ledger store of
    ``recon.ledger.local``, Kafka reader processes for the read_uncommitted pass, the
    discrepancy rows as a CSV file for ``COPY``.

    :raises store.RunNotFound: the run's window is not (completely) on disk.
    """

    def __init__(self, plan: PlannedRun, progress: Progress) -> None:
        from recon.engines.duckdb import DuckDBRules

        cfg, record, data_dir = plan.cfg, plan.record, plan.data_dir
        self.plan, self.cfg, self.record, self.progress = plan, cfg, record, progress
        self.data_dir = data_dir
        self.run_dir = _run_dir(data_dir, cfg.name, record.run_id)
        if not os.path.exists(f"{self.run_dir}/_SUCCESS") or not os.path.isdir(
            f"{self.run_dir}/sink"
        ):
            raise store.RunNotFound(
                f"pipeline '{cfg.name}': run '{record.run_id}' has no complete window on disk "
                "yet: run snapshot_topic first"
            )
        self.con = _connect(data_dir, plan.engine.memory_limit)
        self.rules = DuckDBRules(self.con)
        self.entry_store = LocalEntryStore()
        self._csv: str | None = None

    def part(self, part: str) -> str:
        return _view(self.con, f"recon_{part}", f"{self.run_dir}/{part}")

    def sink_rows(self) -> str:
        from recon.read.sink_arrow import sink_rows_sql

        source = _view(self.con, "recon_sink_file", f"{self.run_dir}/sink")
        columns = [r[0] for r in self.con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()]
        statement = sink_rows_sql(source, columns)
        self.con.execute(f"CREATE OR REPLACE TEMP VIEW recon_sink AS {statement}")
        return "recon_sink"

    def source_rows(self, times: SourceTimes) -> str:
        assert self.cfg.source is not None
        if self.cfg.source.is_topic:
            return self._topic_source_rows(times)
        directory = f"{self.run_dir}/source"
        if not copied_for(directory, times):
            # A window read before the pipeline declared its source.
            n = copy_source_rows(self.cfg, times, self.plan.catalog.source_time_type, directory)
            self.progress(f"run {self.record.run_id}: {n} rows of source {self.cfg.source.name}")
        return _view(self.con, "recon_source", directory)

    def _topic_source_rows(self, times: SourceTimes) -> str:
        from recon.read.source_topic import source_rows_sql, source_topic_ranges, topic_spec

        spec = topic_spec(self.cfg)
        assert spec.message_id is not None
        directory = f"{self.run_dir}/source-records"
        shutil.rmtree(directory, ignore_errors=True)
        kafka = kafka_connection(spec.connection)
        n = _wait(self.cfg.name, read_ranges(
            dict(kafka.config), source_topic_ranges(self.cfg, times), spec.message_id, directory,
            with_time=True, workers=self.plan.engine.readers,
        ), kafka)  # fmt: skip
        self.progress(f"run {self.record.run_id}: {n} records of source {spec.name}")
        records = _view(self.con, "recon_source_records", directory)
        statement = source_rows_sql(records, times)
        self.con.execute(f"CREATE OR REPLACE TEMP VIEW recon_source AS {statement}")
        return "recon_source"

    def results_at(self, path: str) -> str | None:
        directory = local_path(path)
        if not glob.glob(os.path.join(directory, "*.parquet")):
            return None
        # a view per results directory: the base run's (00_carried) and this run's own
        return _view(self.con, f"recon_results_{hashlib.sha1(path.encode()).hexdigest()[:12]}",
                     directory)  # fmt: skip

    def read_every(self, windows: list[PartitionWindow]) -> str:
        kafka = self.plan.kafka
        ranges = window_ranges(windows)
        directory = f"{self.run_dir}/uncommitted"
        shutil.rmtree(directory, ignore_errors=True)
        _wait(self.cfg.name, read_ranges(
            dict(kafka.config), ranges, self.cfg.kafka.message_id, directory,
            isolation_level="read_uncommitted", workers=self.plan.engine.readers,
        ), kafka)  # fmt: skip
        return _view(self.con, "recon_every", directory)

    def write_version(self, base_entries: list[str], has_ledger: bool) -> str:
        # The results are written once, into the new ledger version, where they stand for the
        # entries of the messages new to the ledger (``ledger_new`` is not written): the
        # version's delta holds the entries of the messages the ledger knew.
        ledger_path, results_file = write_version(
            self.rules, self.entry_store, ledger_dir(self.data_dir, self.cfg.name),
            version_name(self.record.run_id), base_entries,
            delta="ledger_known" if has_ledger else None, results=("results", self.record.run_id),
        )  # fmt: skip
        assert results_file is not None
        publish_results(
            results_file, results_path(self.data_dir, self.cfg.name, self.record.run_id)
        )
        return ledger_path

    def discrepancy_rows(self) -> store.DiscrepancyFile:
        self._csv = f"{self.run_dir}/discrepancies-{uuid.uuid4().hex[:8]}.csv"
        return _discrepancy_file(
            self.con, self.cfg.name, self.record.run_id, "discrepancies", self._csv
        )

    def close(self) -> None:
        if self._csv is not None and os.path.exists(self._csv):
            os.unlink(self._csv)
        self.con.close()


def reconcile_run(plan: PlannedRun, *, progress: Progress = noop) -> RunSummary:
    """Judge every message of the run with DuckDB and commit the results exactly once
    (``recon.engines.driver.reconcile_run``).

    :raises store.ConcurrentRunError: another run advanced the pipeline meanwhile.
    """
    from recon.engines import driver

    return driver.reconcile_run(plan, LocalRunIO, progress=progress)


def validate(plan: PlannedRun) -> Any:
    """Validate the run's results with the pipeline's suite on pandas.

    :returns: the ``recon.validation.ValidationOutcome``.
    """
    from recon.validation import validate_results_file

    return validate_results_file(
        plan.cfg, plan.run_id, results_path(plan.data_dir, plan.cfg.name, plan.run_id)
    )
