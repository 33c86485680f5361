"""Reads the results (schema ``recon``) with psycopg2: short read-only connections, bounded queries.

The connection id is ``postgres_recon`` (``$RECON_RESULTS_CONN_ID`` overrides it), resolved like
the rest of the product (``recon.config.connections``: ``AIRFLOW_CONN_<ID>``), else from
Airflow's own connections. Credentials stay here: nothing from the connection is ever returned
to a caller.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

#: The page shows at most this many runs and discrepancy rows per pipeline.
MAX_RUNS = 50
MAX_DISCREPANCIES = 100
#: Severity order of the discrepancy table (unknown verdicts sort last).
VERDICT_ORDER = (
    "lost",
    # a loss before the topic (the source holds it, no committed record does): as missing as lost
    "unpublished",
    "duplicated",
    "aborted_read",
    "phantom",
    "invalid",
    # the newest record of a key missing from its upsert row, an older one's data there instead
    # (a stale overwrite): wrong data in the sink, the whole record's, so before mismatched
    "out_of_order",
    # delivered, but its sink row's content differs from the record's: wrong data in the sink,
    # so before late (right data, only slow)
    "mismatched",
    # delivered, only slower than the pipeline's bound: after what is missing or wrong
    "late",
    "unverifiable",
    "pending",
    "delivered",
)


class ResultsUnavailable(Exception):
    """The results database cannot be reached, or its connection is not defined."""


@dataclass(frozen=True)
class Run:
    pipeline: str
    run_id: str
    semantics: str
    status: str
    started_at: datetime | None
    finished_at: datetime | None = None
    counts: dict[str, int] = field(default_factory=dict)
    contract_passed: bool | None = None
    violations: list[dict[str, Any]] = field(default_factory=list)
    validation_url: str | None = None
    window_spec: list[Any] = field(default_factory=list)
    rewinds: list[Any] = field(default_factory=list)
    duration_seconds: float | None = None
    error: str | None = None
    #: rows of this run a later run proved wrong, per verdict (a late sink row for a ``lost``)
    corrections: dict[str, int] = field(default_factory=dict)
    #: what a declared check could not use, by reason (``recon.runs.unchecked``)
    unchecked: dict[str, int] = field(default_factory=dict)
    #: a run with a source: its way from source to sink (``recon.runs.funnel``, as stored)
    funnel: dict[str, Any] | None = None


@dataclass(frozen=True)
class Discrepancy:
    pipeline: str
    run_id: str
    verdict: str
    message_id: str | None
    topic: str | None
    partition: int | None
    offsets: list[int] = field(default_factory=list)
    sink_keys: list[str] = field(default_factory=list)
    sink_count: int = 0
    topic_duplicate: bool = False
    detail: str | None = None
    detected_at: datetime | None = None


@dataclass(frozen=True)
class Latency:
    """One ``recon.latency`` row: a run's delivery latencies (sink row time minus the record's
    Kafka timestamp) in milliseconds, over one partition or the whole run (``partition`` -1)."""

    pipeline: str
    run_id: str
    partition: int
    messages: int
    #: latencies below zero: the sink's clock behind Kafka's (reported, never clipped)
    negative: int
    min_ms: int
    p50_ms: int
    p95_ms: int
    p99_ms: int
    max_ms: int
    #: the pipeline's ``latency.max_seconds`` in ms when the run had one
    bound_ms: int | None = None
    #: which Kafka timestamp the latency counts from (``CreateTime`` / ``LogAppendTime``, the
    #: topic's); None when the topic's configuration was unreadable
    timestamp_type: str | None = None
    started_at: datetime | None = None


#: The whole run's row in ``recon.latency``.
WHOLE_RUN = -1
#: At most this many per-partition rows of one run (a topic may have hundreds of partitions).
MAX_LATENCY_PARTITIONS = 100

_RUN_COLUMNS = (
    "pipeline, run_id, semantics, status, started_at, finished_at, counts, contract_passed, "
    "violations, validation_url, window_spec, rewinds, duration_seconds, error, corrections, "
    "unchecked, funnel"
)
_DISCREPANCY_COLUMNS = (
    "d.pipeline, d.run_id, d.verdict, d.message_id, d.topic, d.partition, d.offsets, d.sink_keys, "
    "d.sink_count, d.topic_duplicate, d.detail, d.detected_at"
)

# Secrets that error texts may carry (DSNs, key=value settings): masked before anything leaves.
_SECRET_PATTERNS = (
    re.compile(
        r"(?i)((?:password|passwd|pwd|secret|token|api[_-]?key)\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|\S+)"
    ),
    re.compile(r"(?i)(\"(?:password|secret|token)\"\s*:\s*)\"[^\"]*\""),
    re.compile(r"(://[^/\s:@]+:)[^@/\s]+(@)"),
)


def redact(text: str | None) -> str | None:
    """``text`` with anything that looks like a password or token replaced by ``***``."""
    if not text:
        return text
    text = _SECRET_PATTERNS[0].sub(r"\1***", text)
    text = _SECRET_PATTERNS[1].sub(r'\1"***"', text)
    return _SECRET_PATTERNS[2].sub(r"\1***\2", text)


def connect_kwargs() -> dict[str, Any]:
    """psycopg2 keyword arguments for the results database (never shown to anyone)."""
    from recon import settings
    from recon.config.connections import RawConnection, postgres_connection, postgres_from_raw
    from recon.errors import ConnectionNotFound

    conn_id = settings.results_conn_id()
    try:
        return postgres_connection(conn_id).psycopg2_kwargs()
    except ConnectionNotFound:
        # Not in the environment: a connection defined in Airflow (database or secrets backend).
        from airflow.models.connection import Connection

        try:
            conn = Connection.get_connection_from_secrets(conn_id)
        except Exception as exc:
            # Names only, never values: which connection variables this process can see.
            seen = sorted(k for k in os.environ if k.startswith("AIRFLOW_CONN_"))
            raise ResultsUnavailable(
                f"connection '{conn_id}' is neither in the environment nor in Airflow "
                f"({type(exc).__name__}); connection variables here: {seen}"
            ) from None
        return postgres_from_raw(RawConnection.from_airflow(conn_id, conn)).psycopg2_kwargs()


@contextmanager
def results_db() -> Iterator[Any]:
    """A short read-only connection with a statement timeout; closed on exit."""
    import psycopg2

    try:
        conn = psycopg2.connect(
            **connect_kwargs(),
            connect_timeout=5,
            application_name="recon-page",
            options="-c statement_timeout=15000",
        )
    except Exception as exc:  # connection undefined (Airflow's own error types), or unreachable
        raise ResultsUnavailable(redact(str(exc))) from None
    try:
        conn.set_session(readonly=True, autocommit=True)
        yield conn
    finally:
        conn.close()


def _fetch(conn: Any, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
    """Rows of a query; none while the schema does not exist yet (no run has happened)."""
    from psycopg2 import errors

    try:
        with conn.cursor() as cur:
            cur.execute(sql, params)
            return list(cur.fetchall())
    except (errors.UndefinedTable, errors.InvalidSchemaName):
        return []


def _run(row: tuple[Any, ...]) -> Run:
    (pipeline, run_id, semantics, status, started, finished, counts, passed, violations, url,
     window, rewinds, duration, error, corrections, unchecked, funnel) = row  # fmt: skip
    return Run(
        pipeline=pipeline,
        run_id=run_id,
        semantics=semantics,
        status=status,
        started_at=started,
        finished_at=finished,
        counts={str(k): int(v or 0) for k, v in (counts or {}).items()},
        contract_passed=passed,
        violations=[v if isinstance(v, dict) else {"reason": str(v)} for v in violations or []],
        validation_url=url,
        window_spec=list(window or []),
        rewinds=list(rewinds or []),
        duration_seconds=duration,
        error=redact(error),
        corrections={str(k): int(v or 0) for k, v in (corrections or {}).items()},
        unchecked={str(k): int(v or 0) for k, v in (unchecked or {}).items()},
        # a jsonb object; anything else (a hand-edited row) is no funnel rather than a 500
        funnel=funnel if isinstance(funnel, dict) else None,
    )


def latest_runs_by_pipeline(conn: Any) -> list[Run]:
    """The latest run of every pipeline, most recent first.

    Walks the distinct pipelines on the primary key (a loose index scan), so the cost grows with
    the number of pipelines, not of runs.
    """
    sql = f"""
        WITH RECURSIVE p(pipeline) AS (
            (SELECT pipeline FROM recon.runs ORDER BY pipeline LIMIT 1)
            UNION ALL
            SELECT (SELECT r.pipeline FROM recon.runs r WHERE r.pipeline > p.pipeline
                    ORDER BY r.pipeline LIMIT 1)
            FROM p WHERE p.pipeline IS NOT NULL
        )
        SELECT l.* FROM p CROSS JOIN LATERAL (
            SELECT {_RUN_COLUMNS} FROM recon.runs r WHERE r.pipeline = p.pipeline
            ORDER BY r.started_at DESC, r.run_id DESC LIMIT 1
        ) l
        WHERE p.pipeline IS NOT NULL
        ORDER BY l.started_at DESC, l.pipeline
    """
    return [_run(row) for row in _fetch(conn, sql)]


def runs(conn: Any, pipeline: str, limit: int = MAX_RUNS) -> list[Run]:
    """The pipeline's latest runs, newest first."""
    sql = (
        f"SELECT {_RUN_COLUMNS} FROM recon.runs WHERE pipeline = %s "
        "ORDER BY started_at DESC, run_id DESC LIMIT %s"
    )
    return [_run(row) for row in _fetch(conn, sql, (pipeline, min(limit, MAX_RUNS)))]


def run_exists(conn: Any, pipeline: str, run_id: str) -> bool:
    """Whether the pipeline has a stored run of this id."""
    sql = "SELECT 1 FROM recon.runs WHERE pipeline = %s AND run_id = %s"
    return bool(_fetch(conn, sql, (pipeline, run_id)))


def discrepancies(conn: Any, pipeline: str, limit: int = MAX_DISCREPANCIES) -> list[Discrepancy]:
    """The latest discrepancy rows: newest run first, then by severity and position."""
    sql = f"""
        WITH latest AS (
            SELECT run_id, started_at FROM recon.runs WHERE pipeline = %(p)s
            ORDER BY started_at DESC, run_id DESC LIMIT {MAX_RUNS}
        )
        SELECT x.* FROM latest l CROSS JOIN LATERAL (
            SELECT {_DISCREPANCY_COLUMNS},
                   coalesce(array_position(%(order)s::text[], d.verdict), 99) AS rank_,
                   d.first_offset AS first_offset_
            FROM recon.discrepancies d
            WHERE d.pipeline = %(p)s AND d.run_id = l.run_id
            ORDER BY rank_, d.topic, d.partition, d.first_offset, d.message_id
            LIMIT %(limit)s
        ) x
        ORDER BY l.started_at DESC, l.run_id DESC, x.rank_, x.topic, x.partition,
                 x.first_offset_, x.message_id
        LIMIT %(limit)s
    """
    params = {"p": pipeline, "order": list(VERDICT_ORDER), "limit": min(limit, MAX_DISCREPANCIES)}
    rows = _fetch(conn, sql, params)
    return [
        Discrepancy(
            pipeline=r[0],
            run_id=r[1],
            verdict=r[2],
            message_id=r[3],
            topic=r[4],
            partition=r[5],
            offsets=[int(o) for o in (r[6] or [])],
            sink_keys=[str(k) for k in (r[7] or [])],
            sink_count=int(r[8] or 0),
            topic_duplicate=bool(r[9]),
            detail=redact(r[10]),
            detected_at=r[11],
        )
        for r in rows
    ]


#: The ``recon.latency`` columns a :class:`Latency` is read from, each named as its field; the
#: queries select them in this order, then ``started_at``, and :func:`_latency` pairs them up by
#: these names: a column added, dropped or moved here cannot shift a figure into another field.
_LATENCY_FIELDS = (
    "pipeline", "run_id", "partition", "messages", "negative", "min_ms", "p50_ms", "p95_ms",
    "p99_ms", "max_ms", "bound_ms", "timestamp_type",
)  # fmt: skip
_LATENCY_COLUMNS = ", ".join(f"x.{name}" for name in _LATENCY_FIELDS)
#: Read as they come (text); every other field is an integer, ``bound_ms`` the only nullable one.
_LATENCY_TEXT = ("pipeline", "run_id", "timestamp_type")


def _latency(row: tuple[Any, ...]) -> Latency:
    """A row of :data:`_LATENCY_COLUMNS` and ``started_at``, by name: a row of another length
    fails here instead of landing in the wrong fields."""
    named = dict(zip((*_LATENCY_FIELDS, "started_at"), row, strict=True))
    for name in _LATENCY_FIELDS:
        if name in _LATENCY_TEXT or (name == "bound_ms" and named[name] is None):
            continue
        named[name] = int(named[name])
    return Latency(**named)


def latency(conn: Any, pipeline: str, limit: int = MAX_RUNS) -> list[Latency]:
    """The whole-run latency row of each of the pipeline's latest runs that has one, newest
    first (the same runs :func:`runs` reads). None before the table exists (older schema)."""
    sql = f"""
        WITH latest AS (
            SELECT run_id, started_at FROM recon.runs WHERE pipeline = %(p)s
            ORDER BY started_at DESC, run_id DESC LIMIT %(limit)s
        )
        SELECT {_LATENCY_COLUMNS}, l.started_at
        FROM latest l JOIN recon.latency x
             ON x.pipeline = %(p)s AND x.run_id = l.run_id AND x.partition = {WHOLE_RUN}
        ORDER BY l.started_at DESC, l.run_id DESC
    """
    return [_latency(r) for r in _fetch(conn, sql, {"p": pipeline, "limit": min(limit, MAX_RUNS)})]


def latency_partitions(conn: Any, pipeline: str, run_id: str) -> list[Latency]:
    """One run's per-partition latency rows, by partition (at most
    :data:`MAX_LATENCY_PARTITIONS`; the whole-run row is not among them)."""
    sql = f"""
        SELECT {_LATENCY_COLUMNS}, NULL FROM recon.latency x
        WHERE x.pipeline = %s AND x.run_id = %s AND x.partition <> {WHOLE_RUN}
        ORDER BY x.partition LIMIT %s
    """
    return [_latency(r) for r in _fetch(conn, sql, (pipeline, run_id, MAX_LATENCY_PARTITIONS))]
