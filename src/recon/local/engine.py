"""Steps 2 and 3 of a run (``recon.engine``) on one machine: no JVM, same results and commit.

:func:`snapshot_topic` reads the window and the pending records with one Kafka reader process
per core while the sink's rows for the run stream out of PostgreSQL, all into Parquet under the
run's window directory, made visible in one rename. :func:`reconcile_run` judges them with
DuckDB (the rules of ``recon.rules``, run by ``recon.engines.duckdb``), writes the ledger
version (``recon.local.ledger``) and the results Parquet, and commits through
``recon.store.commit_run`` exactly as the Spark engine does.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
import uuid
from typing import Any

from recon import store
from recon.config import PipelineConfig
from recon.connections import kafka_connection
from recon.details import LATE_DELIVERY
from recon.kafka_read import OffsetRange, part_ranges
from recon.local import kafka_arrow
from recon.local import ledger as ledger_store
from recon.outcome import (
    DISCREPANCY_SAMPLE,
    RunSummary,
    judged_outcome,
    mark_error,
    require_record,
    run_summary,
)
from recon.paths import _safe, results_path, window_path
from recon.pending import local_carried_pending, partition_ends, removed_ranges
from recon.rules.render import literal as _literal
from recon.services import Progress, default_data_dir, noop, results_db, sink_db
from recon.snapshot import KafkaAuthFailed, scrub
from recon.verdicts import Verdict
from recon.window import PartitionWindow

PARTS = ("committed", "pending", "inflight", "sink")
#: Read committed, except the in-flight records past the last stable offset
#: (``recon.kafka_read.part_ranges``).
_ISOLATION = {"committed": "read_committed", "pending": "read_committed",
              "inflight": "read_uncommitted"}  # fmt: skip


def _run_dir(data_dir: str, pipeline: str, run_id: str) -> str:
    return os.path.dirname(window_path(data_dir, pipeline, run_id, "committed"))


def _wait(cfg: PipelineConfig, readers: kafka_arrow.Readers) -> int:
    """The readers' record count; their failures name the pipeline and connection."""
    kafka = kafka_connection(cfg.kafka.connection)
    try:
        return readers.wait()
    except KafkaAuthFailed as exc:
        raise KafkaAuthFailed(f"{kafka.where(cfg.name)}: {scrub(str(exc), kafka.config)}") from None
    except kafka_arrow.KafkaReadFailed as exc:
        raise kafka_arrow.KafkaReadFailed(
            f"{kafka.where(cfg.name)}: {scrub(str(exc), kafka.config)}"
        ) from None
    except kafka_arrow.ReaderLost as exc:
        raise kafka_arrow.ReaderLost(f"pipeline '{cfg.name}': {exc}") from None


def _copy_sink(cfg: PipelineConfig, record: store.RunRecord, path: str) -> int:
    from recon.local.sink_arrow import copy_sink_rows, sink_schema
    from recon.sink_read import inspect_sink

    with sink_db(cfg) as pg:
        table = inspect_sink(pg, cfg.sink, cfg.name)
        rows = record.sink_range if cfg.sink.ingest_seq_column else None
        if rows is not None and rows.seq_to is None:
            import pyarrow.parquet as pq

            # The table was empty at snapshot time: nothing to read for this run.
            pq.write_table(sink_schema().empty_table(), path)
            return 0
        return copy_sink_rows(pg, cfg.sink, table, rows, path)


def snapshot_topic(
    cfg: PipelineConfig,
    run_id: str,
    *,
    data_dir: str | None = None,
    progress: Progress = noop,
) -> dict[str, str]:
    """Read the run's window, pending records and sink rows into Parquet.

    A re-run rewrites all three; readers see either the old set or the new one.

    :returns: the Parquet directories by part (``committed``, ``pending``, ``sink``).
    """
    started = time.monotonic()
    record = require_record(cfg, run_id)
    data_dir = data_dir or default_data_dir()
    final = _run_dir(data_dir, cfg.name, run_id)
    staging = f"{final}.tmp-{uuid.uuid4().hex[:8]}"
    kafka = kafka_connection(cfg.kafka.connection)
    offsets = sum(w.pending_to - w.read_from for w in record.windows)
    workers = kafka_arrow.default_workers()
    progress(f"run {run_id}: reading {offsets} offsets with {workers} Kafka reader(s)")
    sink_rows: dict[str, int] = {}
    sink_error: list[BaseException] = []

    def copy_sink() -> None:
        try:
            sink_rows["n"] = _copy_sink(cfg, record, f"{staging}/sink/part-0.parquet")
        except BaseException as exc:  # re-raised in the caller's thread
            sink_error.append(exc)

    try:
        os.makedirs(f"{staging}/sink")
        copier = threading.Thread(target=copy_sink, name="recon-sink-copy")
        readers = {}
        for part, isolation in _ISOLATION.items():
            ranges = [r for r in part_ranges(record.windows, part) if r.end > r.start]
            if not ranges and part == "inflight":
                # Nearly always: no open transaction. No reader process for nothing.
                _empty_part(f"{staging}/{part}")
                continue
            readers[part] = kafka_arrow.read_ranges(
                dict(kafka.config), ranges, cfg.kafka.message_id, f"{staging}/{part}",
                isolation_level=isolation, workers=workers,
            )  # fmt: skip
        try:
            copier.start()
            read = {"inflight": 0} | {part: _wait(cfg, r) for part, r in readers.items()}
        finally:
            for r in readers.values():
                r.stop()
            if copier.is_alive():
                copier.join()
        if sink_error:
            raise sink_error[0]
        open(f"{staging}/_SUCCESS", "w").close()
        if os.path.exists(final):
            shutil.rmtree(final)
        os.rename(staging, final)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    progress(
        f"run {run_id}: {read['committed']} records, {read['pending']} pending, "
        f"{read['inflight']} in flight and {sink_rows.get('n', 0)} sink rows written to {final} in "
        f"{time.monotonic() - started:.1f} s"
    )
    return {part: f"{final}/{part}" for part in PARTS}


def _empty_part(directory: str) -> None:
    import pyarrow.parquet as pq

    os.makedirs(directory)
    pq.write_table(kafka_arrow.window_schema().empty_table(), f"{directory}/part-0.parquet")


def _connect(data_dir: str) -> Any:
    import duckdb

    spill = os.path.join(data_dir, "duckdb-spill")
    os.makedirs(spill, exist_ok=True)
    return duckdb.connect(config={"temp_directory": spill, "preserve_insertion_order": False})


def _view(con: Any, name: str, directory: str) -> str:
    pattern = os.path.join(directory, "*.parquet").replace("'", "''")
    con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT * FROM read_parquet('{pattern}')")
    return name


def _gapped(con: Any, windows: list[PartitionWindow]) -> list[PartitionWindow]:
    """Partitions whose committed records do not fill ``[from, pending_to)`` (as
    ``recon.engines.spark_run._gapped_windows``: counted from the records on disk, not offset
    arithmetic)."""
    counted = {
        (t, int(p)): int(n)
        for t, p, n in con.execute(
            'SELECT topic, "partition", count(*) FROM (SELECT topic, "partition" FROM '
            'recon_window UNION ALL SELECT topic, "partition" FROM recon_readable) GROUP BY ALL'
        ).fetchall()
    }
    return [
        w for w in windows
        if w.pending_to > w.read_from
        and counted.get((w.topic, w.partition), 0) < w.pending_to - w.read_from
    ]  # fmt: skip


def _read_uncommitted(
    cfg: PipelineConfig, con: Any, windows: list[PartitionWindow], directory: str
) -> str:
    """Records visible read_uncommitted but not read_committed: aborted transactions."""
    kafka = kafka_connection(cfg.kafka.connection)
    ranges = [OffsetRange(w.topic, w.partition, w.read_from, w.pending_to) for w in windows]
    shutil.rmtree(directory, ignore_errors=True)
    _wait(cfg, kafka_arrow.read_ranges(
        dict(kafka.config), ranges, cfg.kafka.message_id, directory,
        isolation_level="read_uncommitted",
    ))  # fmt: skip
    _view(con, "recon_every", directory)
    con.execute(
        """CREATE OR REPLACE TEMP TABLE recon_aborted AS
        SELECT e.message_id, e.topic, e."partition", e."offset" FROM recon_every e
        WHERE e.message_id IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM (SELECT topic, "partition", "offset" FROM recon_window UNION ALL
                           SELECT topic, "partition", "offset" FROM recon_readable) c
            WHERE c.topic = e.topic AND c."partition" = e."partition" AND c."offset" = e."offset")
        """
    )
    return "recon_aborted"


def _only_changed_ids(con: Any, ledger: str | None) -> tuple[str, str | None]:
    """Full-scan sinks (no ingest sequence): keep the rows of ids whose count changed since the
    ledger, and zero their ledger count (all their rows are passed again)."""
    if ledger is None:
        return "recon_sink", None
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE recon_changed AS
        SELECT c.message_id FROM (SELECT message_id, count(*) AS now FROM recon_sink
                                  WHERE message_id IS NOT NULL GROUP BY message_id) c
        LEFT JOIN {ledger} l USING (message_id)
        WHERE l.sink_count IS NULL OR c.now <> l.sink_count"""
    )
    con.execute(
        """CREATE OR REPLACE TEMP VIEW recon_sink_changed AS
        SELECT * FROM recon_sink WHERE message_id IN (SELECT message_id FROM recon_changed)
        UNION ALL SELECT * FROM recon_sink WHERE message_id IS NULL"""
    )
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE recon_ledger_adjusted AS
        SELECT * REPLACE (CASE WHEN message_id IN (SELECT message_id FROM recon_changed)
                          THEN 0 ELSE sink_count END AS sink_count) FROM {ledger}"""
    )
    return "recon_sink_changed", "recon_ledger_adjusted"


def _publish_results(results_file: str, out: str) -> None:
    """Make the results file of the ledger version the run's results (``results_path``): a hard
    link, so that a later re-run of the run id, which replaces ``out``, never touches the
    version a pipeline may point at."""
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    target = os.path.join(out, "part-00000.parquet")
    try:
        os.link(results_file, target)
    except OSError:  # another file system: a copy
        shutil.copyfile(results_file, target)


def _flag_discrepancies(con: Any, results: str) -> str:
    """The run's discrepancy rows (not plainly delivered; a late delivery corrects an earlier
    ``lost``), kept apart once: the samples and the commit read them, not the whole run."""
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE recon_flagged AS SELECT * FROM {results}
        WHERE verdict <> '{Verdict.DELIVERED}' OR topic_duplicate
           OR coalesce(starts_with(detail, {_literal(LATE_DELIVERY)}), false)"""
    )
    return "recon_flagged"


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


def _samples(con: Any, flagged: str, verdicts: list[str]) -> dict[str, list[dict[str, Any]]]:
    """The first ``DISCREPANCY_SAMPLE`` rows per verdict (and of the topic_duplicate flag) in
    (partition, first offset, messageId) order, nulls first, as
    ``recon.engines.spark_run._Samples``."""
    out: dict[str, list[dict[str, Any]]] = {}
    for verdict in verdicts:
        where = (
            "topic_duplicate"
            if verdict == Verdict.TOPIC_DUPLICATE
            else f"verdict = {_literal(verdict)}"
        )
        picked = con.execute(
            f"""SELECT message_id, topic, "partition", offsets, sink_keys[1:5], sink_count
            FROM {flagged} WHERE {where}
            ORDER BY "partition" NULLS FIRST, first_offset NULLS FIRST, message_id NULLS FIRST
            LIMIT {DISCREPANCY_SAMPLE}"""
        ).fetchall()
        out[verdict] = [
            {"message_id": m, "topic": t, "partition": p, "offsets": list(o or []),
             "sink_keys": list(k or []), "sink_count": n}
            for m, t, p, o, k, n in picked
        ]  # fmt: skip
    return out


def reconcile_run(
    cfg: PipelineConfig,
    run_id: str,
    *,
    data_dir: str | None = None,
    progress: Progress = noop,
) -> RunSummary:
    """Judge every message of the run and commit the results exactly once.

    :raises store.ConcurrentRunError: another run advanced the pipeline meanwhile.
    """
    from recon.engines.duckdb import reconcile
    from recon.rules.run import next_ledger

    started = time.monotonic()
    record = require_record(cfg, run_id)
    data_dir = data_dir or default_data_dir()
    run_dir = _run_dir(data_dir, cfg.name, run_id)
    if not os.path.exists(f"{run_dir}/_SUCCESS") or not os.path.isdir(f"{run_dir}/sink"):
        raise store.RunNotFound(
            f"pipeline '{cfg.name}': run '{run_id}' has no complete window on disk yet: "
            "run snapshot_topic first"
        )
    with results_db() as pg:
        store.mark_running(pg, cfg.name, run_id)
    con = _connect(data_dir)
    try:
        _view(con, "recon_window", f"{run_dir}/committed")
        _view(con, "recon_readable", f"{run_dir}/pending")
        _view(con, "recon_inflight", f"{run_dir}/inflight")
        con.execute(
            "CREATE OR REPLACE TEMP VIEW recon_pending AS SELECT * FROM recon_readable "
            "UNION ALL SELECT * FROM recon_inflight"
        )
        _view(con, "recon_sink", f"{run_dir}/sink")
        base_entries = ledger_store.read_manifest(record.base_ledger_path)
        sink = "recon_sink"
        if cfg.sink.ingest_seq_column:
            carried = local_carried_pending(con, data_dir, cfg, record, base_entries, progress)
            con.execute(
                f"""CREATE OR REPLACE TEMP VIEW recon_ids AS
                SELECT message_id FROM recon_window UNION ALL
                SELECT message_id FROM recon_pending UNION ALL SELECT message_id FROM recon_sink
                UNION ALL SELECT message_id FROM {carried}"""
            )
            ledger = ledger_store.ledger_for(con, base_entries, "recon_ids")
        else:
            ledger = ledger_store.full_ledger(con, base_entries)
            sink, ledger = _only_changed_ids(con, ledger)
            if ledger is not None:
                # Entries of messages this run has no fact about yield no verdict: leave them
                # out of the judging (and of the entries the run writes). Pending ones stay:
                # they are reported again, or judged once the window passes their records.
                con.execute(
                    f"""CREATE OR REPLACE TEMP TABLE recon_ledger_seen AS SELECT * FROM {ledger}
                    WHERE verdict = '{Verdict.PENDING}' OR message_id IN (
                    SELECT message_id FROM recon_window UNION ALL
                    SELECT message_id FROM recon_pending UNION ALL SELECT message_id FROM {sink})"""
                )
                ledger = "recon_ledger_seen"
        unverifiable = removed_ranges(record.windows)
        judge: dict[str, Any] = {
            "window": "recon_window", "sink_rows": sink, "ledger": ledger,
            "pending": "recon_pending", "unverifiable": unverifiable,
            "partition_ends": partition_ends(record.windows),
        }  # fmt: skip
        rules, counts = reconcile(con, **judge)
        results = "results"
        progress(f"run {run_id}: verdicts counted at {time.monotonic() - started:.1f} s")
        gapped = _gapped(con, record.windows) if counts.get(Verdict.PHANTOM, 0) > 0 else []
        if gapped:
            progress(
                f"run {run_id}: {counts[Verdict.PHANTOM]} phantoms: read_uncommitted pass over "
                f"{len(gapped)} partition(s) with offset gaps"
            )
            aborted = _read_uncommitted(cfg, con, gapped, f"{run_dir}/uncommitted")
            rules, counts = reconcile(con, uncommitted=aborted, **judge)

        # The results are written once, into the new ledger version, where they stand for the
        # entries of the messages new to the ledger (``ledger_new`` is not written): the
        # version's delta holds the entries of the messages the ledger knew.
        next_ledger(rules, run_id)
        delta = "ledger_known" if ledger is not None else None
        ledger_path, results_file = ledger_store.write_version(
            con, f"{data_dir.rstrip('/')}/ledger/{cfg.name}",
            f"{_safe(run_id)}-{uuid.uuid4().hex[:8]}", base_entries, delta,
            results=(results, run_id),
        )  # fmt: skip
        assert results_file is not None
        _publish_results(results_file, results_path(data_dir, cfg.name, run_id))
        progress(f"run {run_id}: ledger and results written at {time.monotonic() - started:.1f} s")

        (sink_scanned,) = con.execute(f"SELECT count(*) FROM {sink}").fetchone()
        flagged = _flag_discrepancies(con, results)
        samples = _samples(
            con, flagged, [v for v, n in counts.items() if n and v != Verdict.DELIVERED]
        )
        csv_path = f"{run_dir}/discrepancies-{uuid.uuid4().hex[:8]}.csv"
        rows = _discrepancy_file(con, cfg.name, run_id, flagged, csv_path)
        outcome = judged_outcome(
            cfg, counts, ledger_path=ledger_path, sink_rows_scanned=int(sink_scanned),
            duration_seconds=time.monotonic() - started,
        )  # fmt: skip
        try:
            with results_db() as pg:
                written = store.commit_run(pg, record=record, outcome=outcome, discrepancies=rows)
        finally:
            os.unlink(rows.path)
    except Exception as exc:
        mark_error(cfg, run_id, exc, progress)
        raise
    finally:
        con.close()
    progress(
        f"run {run_id}: committed {written} discrepancy rows in {outcome.duration_seconds:.1f} s"
    )
    return run_summary(cfg, record, outcome, written, samples)
