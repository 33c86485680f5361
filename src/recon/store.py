"""The results store: schema ``recon`` in PostgreSQL, and the one transaction that commits a run.

A run's discrepancies, its ``recon.runs`` row, the watermarks and the pointer to the new ledger
version are written in one transaction, under a per-pipeline advisory lock and a compare-and-set on
the run the snapshot started from: two runs of one pipeline can both compute, only one advances.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from typing import Any

from recon.corrections import record_corrections
from recon.errors import ReconError, ServiceUnavailable, first_line
from recon.sink_position import SinkPosition, SinkRange
from recon.window import PartitionWindow, Watermark
from recon.window import rewinds as window_rewinds


class ConcurrentRunError(ReconError):
    """Another run of the pipeline advanced the watermarks after this run took its snapshot."""


class CommitInterrupted(ServiceUnavailable):
    """The results database went away during a run's commit transaction.

    PostgreSQL either committed the whole transaction or none of it; a re-run of the same run id
    completes or replaces it either way.
    """


class RunNotFound(ReconError):
    """A step of a run was asked for before the run's snapshot exists."""


@dataclass(frozen=True)
class PipelineState:
    """Where the pipeline stands: the last committed run and what it left."""

    run_id: str | None
    sink_seq: int | None
    ledger_path: str | None
    watermarks: dict[tuple[str, int], Watermark] = field(default_factory=dict)
    sink_snapshot: str | None = None
    sink_floor: int | None = None

    @property
    def sink_position(self) -> SinkPosition | None:
        """Where the last committed run left the sink (None: no run recorded a snapshot)."""
        if self.sink_snapshot is None:
            return None
        return SinkPosition(self.sink_seq, self.sink_snapshot, self.sink_floor)


@dataclass(frozen=True)
class RunRecord:
    """A run's snapshot and what it started from, as stored."""

    pipeline: str
    run_id: str
    status: str
    snapshot_at: datetime
    windows: list[PartitionWindow]
    base_run_id: str | None
    base_ledger_path: str | None
    sink_seq_from: int | None
    sink_seq_to: int | None
    #: results of this run id were committed at least once (a re-run replaces them)
    committed: bool = False
    sink_snapshot_from: str | None = None
    sink_snapshot_to: str | None = None
    sink_floor_from: int | None = None
    sink_floor_to: int | None = None

    @property
    def sink_range(self) -> SinkRange:
        """The sink rows this run reads (``recon.sink_position``)."""
        return SinkRange(
            self.sink_seq_from, self.sink_seq_to, self.sink_snapshot_from,
            self.sink_snapshot_to, self.sink_floor_from,
        )  # fmt: skip

    @property
    def fact_bound(self) -> int:
        """At most how many records and sink rows the run judges: its windows' offsets
        (committed, pending and in flight) plus its range of the sink's ingest sequence."""
        records = sum(w.high_watermark - w.read_from for w in self.windows)
        if self.sink_seq_to is None:
            return records
        return records + self.sink_seq_to - (self.sink_range.lowest or 0)


def ensure_schema(pg: Any) -> None:
    """Create schema ``recon`` and its tables if absent, or bring them up to date (idempotent).

    The DDL runs only when the schema's recorded version differs from this package's: even
    ``ALTER TABLE ... ADD COLUMN IF NOT EXISTS`` takes an ACCESS EXCLUSIVE lock, and a run doing
    so while another run holds a read lock on the same tables deadlocks with it.
    """
    ddl = resources.files("recon").joinpath("sql/schema.sql").read_text()
    version = hashlib.sha256(ddl.encode()).hexdigest()
    if _schema_version(pg) == version:
        pg.rollback()
        return
    with pg.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext('recon:schema'))")
        if _schema_version(pg) != version:  # another session may have applied it meanwhile
            cur.execute(ddl)
            cur.execute("DELETE FROM recon.schema_version")
            cur.execute("INSERT INTO recon.schema_version (version) VALUES (%s)", (version,))
    pg.commit()


def _schema_version(pg: Any) -> str | None:
    with pg.cursor() as cur:
        cur.execute("SELECT to_regclass('recon.schema_version') IS NOT NULL")
        if not cur.fetchone()[0]:
            return None
        cur.execute("SELECT version FROM recon.schema_version")
        row = cur.fetchone()
    return str(row[0]) if row else None


def load_state(pg: Any, pipeline: str) -> PipelineState:
    with pg.cursor() as cur:
        cur.execute(
            "SELECT run_id, sink_seq, ledger_path, sink_snapshot, sink_floor "
            "FROM recon.pipeline_state WHERE pipeline = %s",
            (pipeline,),
        )
        row = cur.fetchone()
        cur.execute(
            "SELECT topic, partition, next_offset, committed_offset FROM recon.watermarks "
            "WHERE pipeline = %s",
            (pipeline,),
        )
        marks = {(t, p): Watermark(n, c) for t, p, n, c in cur.fetchall()}
    if row is None:
        return PipelineState(None, None, None, marks)
    return PipelineState(row[0], row[1], row[2], marks, row[3], row[4])


def find_run(pg: Any, pipeline: str, run_id: str) -> RunRecord | None:
    with pg.cursor() as cur:
        cur.execute(
            "SELECT status, snapshot_at, base_run_id, base_ledger_path, sink_seq_from, "
            "sink_seq_to, ledger_path IS NOT NULL, sink_snapshot_from, sink_snapshot_to, "
            "sink_floor_from, sink_floor_to FROM recon.runs "
            "WHERE pipeline = %s AND run_id = %s",
            (pipeline, run_id),
        )
        row = cur.fetchone()
        if row is None or row[1] is None:
            return None
        cur.execute(
            "SELECT topic, partition, log_start_offset, last_stable_offset, high_watermark, "
            "committed_offset, settled_offset, window_from, window_to, previous_committed, "
            "rewound, new_partition FROM recon.offset_snapshots "
            "WHERE pipeline = %s AND run_id = %s ORDER BY topic, partition",
            (pipeline, run_id),
        )
        windows = [PartitionWindow(*r) for r in cur.fetchall()]
    return RunRecord(pipeline, run_id, row[0], row[1], windows, *row[2:])


def record_snapshot(
    pg: Any,
    *,
    pipeline: str,
    run_id: str,
    semantics: str,
    snapshot_at: datetime,
    windows: Sequence[PartitionWindow],
    base: PipelineState,
    sink: SinkPosition | None,
) -> None:
    """Store a new run's snapshot (replacing any earlier attempt of the same run id).

    :param sink: the sink's position at the snapshot (None: a sink without ingest sequence).
    """
    window_spec = [w.as_dict() for w in windows]
    rewinds = window_rewinds(list(windows))
    new_parts = [w.partition for w in windows if w.new_partition]
    with pg.cursor() as cur:
        cur.execute(
            "DELETE FROM recon.offset_snapshots WHERE pipeline = %s AND run_id = %s",
            (pipeline, run_id),
        )
        for w in windows:
            cur.execute(
                "INSERT INTO recon.offset_snapshots (pipeline, run_id, topic, partition, "
                "log_start_offset, last_stable_offset, high_watermark, committed_offset, "
                "settled_offset, window_from, window_to, previous_committed, rewound, "
                "new_partition, snapshot_at) "
                "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                (
                    pipeline, run_id, w.topic, w.partition, w.log_start_offset,
                    w.last_stable_offset, w.high_watermark, w.committed_offset,
                    w.settled_offset, w.window_from, w.window_to, w.previous_committed,
                    w.rewound, w.new_partition, snapshot_at,
                ),
            )  # fmt: skip
        cur.execute(
            "INSERT INTO recon.runs (pipeline, run_id, semantics, status, started_at, snapshot_at, "
            "window_spec, rewinds, new_partitions, base_run_id, base_ledger_path, sink_seq_from, "
            "sink_seq_to, sink_snapshot_from, sink_snapshot_to, sink_floor_from, sink_floor_to) "
            "VALUES (%s,%s,%s,'running',now(),%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s) "
            "ON CONFLICT (pipeline, run_id) DO UPDATE SET semantics = EXCLUDED.semantics, "
            "status = 'running', started_at = now(), finished_at = NULL, "
            "snapshot_at = EXCLUDED.snapshot_at, window_spec = EXCLUDED.window_spec, "
            "rewinds = EXCLUDED.rewinds, new_partitions = EXCLUDED.new_partitions, "
            "base_run_id = EXCLUDED.base_run_id, base_ledger_path = EXCLUDED.base_ledger_path, "
            "sink_seq_from = EXCLUDED.sink_seq_from, sink_seq_to = EXCLUDED.sink_seq_to, "
            "sink_snapshot_from = EXCLUDED.sink_snapshot_from, "
            "sink_snapshot_to = EXCLUDED.sink_snapshot_to, "
            "sink_floor_from = EXCLUDED.sink_floor_from, sink_floor_to = EXCLUDED.sink_floor_to, "
            "error = NULL",
            (
                pipeline, run_id, semantics, snapshot_at, json.dumps(window_spec),
                json.dumps(rewinds), json.dumps(new_parts), base.run_id, base.ledger_path,
                base.sink_seq, sink.seq if sink else None,
                base.sink_snapshot if sink else None, sink.snapshot if sink else None,
                base.sink_floor if sink else None, sink.floor if sink else None,
            ),
        )  # fmt: skip
    pg.commit()


def mark_running(pg: Any, pipeline: str, run_id: str) -> None:
    with pg.cursor() as cur:
        cur.execute(
            "UPDATE recon.runs SET status = 'running', started_at = now(), finished_at = NULL, "
            "error = NULL WHERE pipeline = %s AND run_id = %s",
            (pipeline, run_id),
        )
    pg.commit()


def mark_error(pg: Any, pipeline: str, run_id: str, error: str) -> None:
    """Record that a run failed before committing; nothing else changes."""
    pg.rollback()
    with pg.cursor() as cur:
        cur.execute(
            "UPDATE recon.runs SET status = 'error', finished_at = now(), error = %s "
            "WHERE pipeline = %s AND run_id = %s",
            (error[:2000], pipeline, run_id),
        )
    pg.commit()


DISCREPANCY_COLUMNS = (
    "pipeline", "run_id", "verdict", "message_id", "topic", "partition", "offsets",
    "first_offset", "sink_keys", "sink_count", "topic_duplicate", "detail",
)  # fmt: skip


def _copy_value(value: Any) -> str:
    if value is None:
        return "\\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, list | tuple):
        inner = ",".join(
            '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"' for v in value
        )
        value = "{" + inner + "}"
    text = str(value)
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _copy_rows(cur: Any, rows: Iterable[Sequence[Any]], chunk: int = 20000) -> int:
    total = 0
    buf = io.StringIO()
    pending = 0
    columns = ", ".join(DISCREPANCY_COLUMNS)
    copy_sql = f"COPY recon.discrepancies ({columns}) FROM STDIN"

    def flush() -> None:
        buf.seek(0)
        cur.copy_expert(copy_sql, buf)
        buf.seek(0)
        buf.truncate()

    for row in rows:
        buf.write("\t".join(_copy_value(v) for v in row))
        buf.write("\n")
        pending += 1
        total += 1
        if pending >= chunk:
            flush()
            pending = 0
    if pending:
        flush()
    return total


@dataclass(frozen=True)
class DiscrepancyFile:
    """Discrepancy rows already written as CSV (``DISCREPANCY_COLUMNS`` order, no header, an
    unquoted empty field for NULL, arrays as PostgreSQL array literals), with their count."""

    path: str
    rows: int


def _copy_file(cur: Any, source: DiscrepancyFile) -> int:
    columns = ", ".join(DISCREPANCY_COLUMNS)
    with open(source.path, "rb") as fh:
        cur.copy_expert(f"COPY recon.discrepancies ({columns}) FROM STDIN WITH (FORMAT csv)", fh)
    return source.rows


@dataclass(frozen=True)
class RunOutcome:
    """What a run commits besides its discrepancy rows."""

    status: str  # passed | failed
    counts: Mapping[str, int]
    contract_passed: bool
    violations: list[dict[str, Any]]
    ledger_path: str
    sink_rows_scanned: int
    duration_seconds: float
    topic_duplicates: int


def commit_run(
    pg: Any,
    *,
    record: RunRecord,
    outcome: RunOutcome,
    discrepancies: Iterable[Sequence[Any]] | DiscrepancyFile,
) -> int:
    """Replace the run's results and advance the pipeline, all in one transaction.

    :param pg: a psycopg2 connection to the results database (autocommit off).
    :param record: the run's stored snapshot.
    :param outcome: counts, contract, the new ledger version.
    :param discrepancies: rows in ``DISCREPANCY_COLUMNS`` order, streamed, or a CSV file of them.
    :returns: the number of discrepancy rows written.
    :raises ConcurrentRunError: another run committed since this run's snapshot; nothing changed.
    """
    pipeline, run_id = record.pipeline, record.run_id
    try:
        with pg.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"recon:run:{pipeline}",))
            cur.execute(
                "SELECT run_id FROM recon.pipeline_state WHERE pipeline = %s FOR UPDATE",
                (pipeline,),
            )
            row = cur.fetchone()
            current = row[0] if row else None
            # The state moves on only from the run this one started from; a re-run of the run
            # that made the current state rewrites it with the same values. A run that committed
            # before may replace its own results (a cleared old run) but never moves the state.
            advance = current in (record.base_run_id, run_id)
            if not advance and not record.committed:
                raise ConcurrentRunError(
                    f"pipeline '{pipeline}': run '{current}' committed after run '{run_id}' took "
                    "its snapshot; this run's results were not committed (run it again: it takes "
                    "a fresh snapshot)"
                )
            cur.execute(
                "DELETE FROM recon.discrepancies WHERE pipeline = %s AND run_id = %s",
                (pipeline, run_id),
            )
            if isinstance(discrepancies, DiscrepancyFile):
                written = _copy_file(cur, discrepancies)
            else:
                written = _copy_rows(cur, discrepancies)
            cur.execute(
                "UPDATE recon.runs SET status = %s, finished_at = now(), counts = %s, "
                "contract_passed = %s, violations = %s, ledger_path = %s, sink_rows_scanned = %s, "
                "duration_seconds = %s, topic_duplicates = %s, error = NULL "
                "WHERE pipeline = %s AND run_id = %s",
                (
                    outcome.status, json.dumps(dict(outcome.counts)), outcome.contract_passed,
                    json.dumps(outcome.violations), outcome.ledger_path,
                    outcome.sink_rows_scanned, outcome.duration_seconds,
                    outcome.topic_duplicates, pipeline, run_id,
                ),
            )  # fmt: skip
            if advance:
                for w in record.windows:
                    cur.execute(
                        "INSERT INTO recon.watermarks (pipeline, topic, partition, next_offset, "
                        "committed_offset, run_id) VALUES (%s,%s,%s,%s,%s,%s) "
                        "ON CONFLICT (pipeline, topic, partition) DO UPDATE SET "
                        "next_offset = EXCLUDED.next_offset, "
                        "committed_offset = EXCLUDED.committed_offset, run_id = EXCLUDED.run_id",
                        (pipeline, w.topic, w.partition, w.window_to, w.committed_offset, run_id),
                    )
                cur.execute(
                    "INSERT INTO recon.pipeline_state (pipeline, sink_seq, ledger_path, run_id, "
                    "sink_snapshot, sink_floor, updated_at) VALUES (%s,%s,%s,%s,%s,%s,now()) "
                    "ON CONFLICT (pipeline) DO UPDATE SET "
                    "sink_seq = EXCLUDED.sink_seq, ledger_path = EXCLUDED.ledger_path, "
                    "run_id = EXCLUDED.run_id, sink_snapshot = EXCLUDED.sink_snapshot, "
                    "sink_floor = EXCLUDED.sink_floor, updated_at = now()",
                    (
                        pipeline,
                        record.sink_seq_to if record.sink_seq_to is not None else
                        record.sink_seq_from,
                        outcome.ledger_path,
                        run_id,
                        record.sink_snapshot_to,
                        record.sink_floor_to,
                    ),
                )  # fmt: skip
            record_corrections(cur, pipeline, run_id)
        pg.commit()
    except BaseException as exc:
        with contextlib.suppress(Exception):  # a dead connection cannot roll back, nor needs to
            pg.rollback()
        if _connection_lost(exc):
            raise CommitInterrupted(
                f"pipeline '{pipeline}': the results database went away while run '{run_id}' "
                f"committed ({first_line(exc)}); "
                "PostgreSQL kept all of the run's results or none: run it again with the same "
                "run id"
            ) from None
        raise
    return written


def _connection_lost(exc: BaseException) -> bool:
    import psycopg2

    return isinstance(exc, psycopg2.OperationalError | psycopg2.InterfaceError)


def list_runs(pg: Any, pipeline: str, limit: int = 20) -> list[dict[str, Any]]:
    with pg.cursor() as cur:
        cur.execute(
            "SELECT run_id, status, started_at, finished_at, counts, contract_passed, "
            "duration_seconds, rewinds, error FROM recon.runs WHERE pipeline = %s "
            "ORDER BY started_at DESC LIMIT %s",
            (pipeline, limit),
        )
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def reset_pipeline(pg: Any, pipeline: str) -> int:
    """Forget where the pipeline stands (watermarks, sink sequence, ledger pointer), so the next
    run starts from the beginning, as for a re-created topic. Run history is kept.

    :returns: the number of partition watermarks removed.
    """
    with pg.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"recon:run:{pipeline}",))
        cur.execute("DELETE FROM recon.watermarks WHERE pipeline = %s", (pipeline,))
        removed = int(cur.rowcount)
        cur.execute("DELETE FROM recon.pipeline_state WHERE pipeline = %s", (pipeline,))
    pg.commit()
    return removed


def forget_pipeline(pg: Any, pipeline: str) -> None:
    """Delete everything stored for a pipeline (runs, snapshots, discrepancies, alerts, state):
    for pipelines that no longer exist, such as a test's."""
    from psycopg2 import sql

    with pg.cursor() as cur:
        for table in ("discrepancies", "offset_snapshots", "alerts", "watermarks",
                      "pipeline_state", "runs"):  # fmt: skip
            cur.execute(
                sql.SQL("DELETE FROM {} WHERE pipeline = %s").format(
                    sql.Identifier("recon", table)
                ),
                (pipeline,),
            )
    pg.commit()
