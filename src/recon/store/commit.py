"""The one transaction that commits a run: its discrepancies (``COPY``), its ``recon.runs`` row,
the watermarks and the pointer to the new ledger version.

It runs under a per-pipeline advisory lock and a compare-and-set on the run the snapshot started
from: two runs of one pipeline can both compute, only one advances.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from recon.errors import ReconError, ServiceUnavailable, first_line
from recon.model.details import UNCHECKED
from recon.store.corrections import record_corrections
from recon.store.runs import RunRecord


class ConcurrentRunError(ReconError):
    """Another run of the pipeline advanced the watermarks after this run took its snapshot."""


class CommitInterrupted(ServiceUnavailable):
    """The results database went away during a run's commit transaction.

    PostgreSQL either committed the whole transaction or none of it; a re-run of the same run id
    completes or replaces it either way.
    """


class ResultsRefused(ReconError):
    """The results database refused a run's results for what they hold (a value over a limit, a
    constraint): the commit rolled back, and another try of the same run fails the same way, so
    it is a failed run with its reason, never a service to wait for."""


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
    #: ``recon.rules.readouts.latency_stats`` rows (empty: the pipeline measures no latency).
    latency: Sequence[Sequence[int | None]] = ()
    #: the pipeline's latency bound in milliseconds, stored beside the percentiles.
    late_after_ms: int | None = None
    #: the topic's ``message.timestamp.type``, stored beside the percentiles.
    timestamp_type: str | None = None
    #: usable records without a Kafka timestamp, sink rows with a null time column (reported
    #: in the run's summary: their messages have no latency).
    untimed: tuple[int, int] = (0, 0)
    #: an upsert sink's records and rows without a key or position, and its keys with more than
    #: one row (``recon.rules.readouts.unordered``); None: the pipeline declares no order.
    unordered: tuple[int, int, int] | None = None
    #: a run with a source: its counts from source to sink and its first unsourced messages
    #: (``recon.runs.funnel``); None: the pipeline declares no source.
    funnel: Mapping[str, Any] | None = None
    #: the source table's rows without a time (``recon.read.source.untimed_source_rows``).
    untimed_source: int = 0
    #: per dead-letter partition (``diverted``), where the next run reads it from: kept in
    #: ``recon.watermarks`` beside the topic's partitions (no committed offset).
    dead_letter_positions: Mapping[tuple[str, int], int] = field(default_factory=dict)

    @property
    def unchecked(self) -> dict[str, int]:
        """What a declared check could not use, by reason (``recon.runs.unchecked``): only the
        reasons that occurred."""
        # in UNCHECKED's order: the names are the ones the summary words
        counts = (*self.untimed, *(self.unordered or (0, 0, 0)), self.untimed_source)
        return {reason: n for reason, n in zip(UNCHECKED, counts, strict=True) if n}


def _replace_latency(cur: Any, pipeline: str, run_id: str, outcome: RunOutcome) -> None:
    """The run's latency rows, replaced (a re-run of the run rewrites them)."""
    cur.execute("DELETE FROM recon.latency WHERE pipeline = %s AND run_id = %s", (pipeline, run_id))
    for partition, *figures in outcome.latency:
        cur.execute(
            "INSERT INTO recon.latency (pipeline, run_id, partition, messages, negative, min_ms, "
            "p50_ms, p95_ms, p99_ms, max_ms, bound_ms, timestamp_type) "
            "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
            (pipeline, run_id, -1 if partition is None else partition, *figures,
             outcome.late_after_ms, outcome.timestamp_type),
        )  # fmt: skip


def moves_state(current_run_id: str | None, base_run_id: str | None, run_id: str) -> bool:
    """Whether a run's commit moves the pipeline's state on: only from the run it started from;
    a re-run of the run that made the current state rewrites it with the same values.

    :param current_run_id: the run the pipeline's state stands at now (None: no run yet).
    :param base_run_id: the run this run's snapshot started from.
    :param run_id: this run.
    """
    return current_run_id in (base_run_id, run_id)


def commit_accepted(
    current_run_id: str | None, base_run_id: str | None, run_id: str, committed: bool
) -> bool:
    """Whether :func:`commit_run` would accept a run's commit now: it moves the state
    (:func:`moves_state`), or the run committed before and only replaces its own results (a
    cleared old run; the state stays). Anything else raises :class:`ConcurrentRunError`.

    :param committed: results of this run were committed at least once.
    """
    return committed or moves_state(current_run_id, base_run_id, run_id)


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
            advance = moves_state(current, record.base_run_id, run_id)
            if not commit_accepted(current, record.base_run_id, run_id, record.committed):
                raise ConcurrentRunError(
                    f"pipeline '{pipeline}': run '{current}' committed after run '{run_id}' took "
                    "its snapshot; this run's results were not committed (run it again: it takes "
                    "a fresh snapshot)"
                )
            cur.execute(
                "DELETE FROM recon.discrepancies WHERE pipeline = %s AND run_id = %s",
                (pipeline, run_id),
            )
            _replace_latency(cur, pipeline, run_id, outcome)
            if isinstance(discrepancies, DiscrepancyFile):
                written = _copy_file(cur, discrepancies)
            else:
                written = _copy_rows(cur, discrepancies)
            cur.execute(
                "UPDATE recon.runs SET status = %s, finished_at = now(), counts = %s, "
                "contract_passed = %s, violations = %s, ledger_path = %s, sink_rows_scanned = %s, "
                "duration_seconds = %s, topic_duplicates = %s, unchecked = %s, funnel = %s, "
                "error = NULL "
                "WHERE pipeline = %s AND run_id = %s",
                (
                    outcome.status, json.dumps(dict(outcome.counts)), outcome.contract_passed,
                    json.dumps(outcome.violations), outcome.ledger_path,
                    outcome.sink_rows_scanned, outcome.duration_seconds,
                    outcome.topic_duplicates, json.dumps(outcome.unchecked),
                    None if outcome.funnel is None else json.dumps(dict(outcome.funnel)),
                    pipeline, run_id,
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
                for (topic, partition), offset in outcome.dead_letter_positions.items():
                    cur.execute(
                        "INSERT INTO recon.watermarks (pipeline, topic, partition, next_offset, "
                        "committed_offset, run_id) VALUES (%s,%s,%s,%s,NULL,%s) "
                        "ON CONFLICT (pipeline, topic, partition) DO UPDATE SET "
                        "next_offset = EXCLUDED.next_offset, committed_offset = NULL, "
                        "run_id = EXCLUDED.run_id",
                        (pipeline, topic, partition, offset, run_id),
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
        if _refused(exc):
            raise ResultsRefused(
                f"pipeline '{pipeline}': the results database refused run '{run_id}''s results "
                f"(SQLSTATE {getattr(exc, 'pgcode', None)}: {first_line(exc)}); nothing was "
                "committed, and running it again will fail the same way"
            ) from None
        if _connection_lost(exc):
            raise CommitInterrupted(
                f"pipeline '{pipeline}': the results database went away while run '{run_id}' "
                f"committed ({first_line(exc)}); "
                "PostgreSQL kept all of the run's results or none: run it again with the same "
                "run id"
            ) from None
        raise
    return written


#: SQLSTATE classes of an error that another try can get past: a connection lost or refused
#: (08), the server shutting down or restarting (57), out of resources (53), a system error (58),
#: a transaction rolled back for a conflict (40), and a lock not granted in time (55P03).
#: psycopg2 raises OperationalError for others too, program limits (54: a value too large for
#: an index) among them, which fail every try.
TRANSIENT_SQLSTATE_CLASSES = ("08", "40", "53", "57", "58")


def transient(exc: BaseException) -> bool:
    """Whether a database error may pass if the same statement is tried again (``pgcode`` None:
    the server never answered)."""
    import psycopg2

    if not isinstance(exc, psycopg2.Error):
        return False
    code = exc.pgcode
    return code is None or code[:2] in TRANSIENT_SQLSTATE_CLASSES or code == "55P03"


def _connection_lost(exc: BaseException) -> bool:
    import psycopg2

    return isinstance(exc, psycopg2.OperationalError | psycopg2.InterfaceError) and transient(exc)


def _refused(exc: BaseException) -> bool:
    """A statement of the commit the server refused for what it holds, not for its state."""
    import psycopg2

    return isinstance(exc, psycopg2.Error) and not transient(exc)
