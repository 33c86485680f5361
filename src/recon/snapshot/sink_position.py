"""Where a run stands in the sink's ingest sequence, so that rows committing late are still read.

PostgreSQL assigns a ``bigserial`` at insert, not at commit. With two writers, a row with a low
sequence can commit after rows with higher ones: a run that reads ``(previous max, max]`` and
moves on never reads it, and its message stays ``lost`` for good. Every run therefore records,
with the highest sequence it can see (``seq``), the database's snapshot at that moment
(``pg_current_snapshot()``: which transactions were still in progress) and a *floor*: no
transaction in progress then can hold a sequence at or below it. The next run reads

* the new rows: ``previous seq < seq <= this seq``, visible in this run's snapshot, and
* the late rows: ``floor < seq <= previous seq``, written by a transaction that was in progress
  in the previous snapshot and is visible in this one (committed since),

so each row is read exactly once, by the first run whose snapshot sees it, and a re-run of a run
reads the same rows (visibility is judged against the stored snapshots, not the clock).

The floor is found from the snapshots alone (no privileges beyond reading the table): a
transaction in progress at the snapshot that began after an earlier reading of the sequence
holds only higher sequences. So the run reads the sequence once (the *probe*), waits until every
transaction in progress began after the probe (up to :data:`PROBE_SECONDS`), then takes its
snapshot; when an older transaction stays open, the floor falls back to the previous run's
sequence or floor. A long transaction anywhere in the sink's database therefore costs re-reading
more of the sequence (filtered on the server), never a missed row.

The ingest sequence must be assigned by the insert itself (a column default or identity): a
writer that draws ``nextval`` long before it inserts defeats any sequence watermark.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

#: How long a run waits for the transactions older than its probe to end before it takes its
#: snapshot (short ones end within it; a longer one lowers the floor instead).
PROBE_SECONDS = 1.0


@dataclass(frozen=True)
class SinkPosition:
    """The sink at one run's snapshot: the highest visible sequence, the snapshot, the floor."""

    seq: int | None
    snapshot: str | None
    floor: int | None


@dataclass(frozen=True)
class SinkRange:
    """The sink rows a run reads: from the previous run's position to this one's."""

    seq_from: int | None  # the previous run's highest sequence (None: nothing read yet)
    seq_to: int | None  # this run's (None: the table was empty)
    snapshot_from: str | None = None
    snapshot_to: str | None = None
    floor_from: int | None = None

    @property
    def lowest(self) -> int | None:
        """Exclusive lower bound of every sequence the run may read."""
        if self.snapshot_from is not None and self.snapshot_to is not None:
            return self.floor_from
        return self.seq_from

    def where(self, seq: Any) -> Any:
        """The filter (a ``psycopg2.sql.Composable``) on the sink table for this range.

        :param seq: the ingest sequence column as a composable (``sql.Identifier``).
        """
        from psycopg2 import sql

        parts: list[sql.Composable] = []
        if self.seq_to is not None:
            parts.append(sql.SQL("{} <= {}").format(seq, sql.Literal(self.seq_to)))
        if self.snapshot_to is None:
            # A run recorded before snapshots were kept: the plain sequence range.
            if self.seq_from is not None:
                parts.append(sql.SQL("{} > {}").format(seq, sql.Literal(self.seq_from)))
            return sql.SQL(" AND ").join(parts) if parts else sql.SQL("true")
        parts.append(sql.SQL("pg_visible_in_snapshot({}, {}::pg_snapshot)").format(
            _ROW_XID, sql.Literal(self.snapshot_to)))  # fmt: skip
        new = (
            sql.SQL("{} > {}").format(seq, sql.Literal(self.seq_from))
            if self.seq_from is not None
            else sql.SQL("true")
        )
        if self.snapshot_from is not None and self.seq_from is not None:
            late = [
                _in_progress(sql.Literal(self.snapshot_from)),
                sql.SQL("{} <= {}").format(seq, sql.Literal(self.seq_from)),
            ]
            if self.floor_from is not None:
                late.append(sql.SQL("{} > {}").format(seq, sql.Literal(self.floor_from)))
            new = sql.SQL("({} OR ({}))").format(new, sql.SQL(" AND ").join(late))
        parts.append(new)
        return sql.SQL(" AND ").join(parts)

    def changed_where(self, message_id: Any, table: Any) -> Any:
        """The filter of a sink without ingest sequence read by ``xmin`` (``recon.snapshot.
        sink_changes``): the rows written since the previous snapshot, and every row of their
        messages (the rules compare a message's row count with its ledger entry's, so a row read
        again is never counted twice). None: the whole table (no previous snapshot).

        :param message_id: the messageId column as a composable.
        :param table: the table as a composable.
        """
        from psycopg2 import sql

        if self.snapshot_from is None or self.snapshot_to is None:
            return None
        horizon = int(self.snapshot_from.split(":")[0])
        # Everything at or past the previous snapshot's xmin: a transaction in progress then is
        # read once it commits, and so is each of its subtransactions (pg_current_snapshot lists
        # no subtransaction ids, so pg_visible_in_snapshot cannot tell them from committed ones).
        changed = sql.SQL(
            "{x} >= {h}::xid8 AND pg_visible_in_snapshot({x}, {s}::pg_snapshot)"
        ).format(x=_ROW_XID, h=sql.Literal(str(horizon)), s=sql.Literal(self.snapshot_to))
        return sql.SQL(
            "pg_visible_in_snapshot({x}, {s}::pg_snapshot) AND ({changed} OR {m} IN "
            "(SELECT {m} FROM {t} WHERE {changed}))"
        ).format(
            x=_ROW_XID, s=sql.Literal(self.snapshot_to), changed=changed, m=message_id, t=table
        )


def _xid8_sql() -> Any:
    """The row's inserting transaction as ``xid8``: ``xmin`` is 32 bits, so its epoch is taken
    from the current snapshot (every existing row's transaction began before it)."""
    from psycopg2 import sql

    now = sql.SQL("pg_snapshot_xmax(pg_current_snapshot())::text::bigint")
    raw = sql.SQL("xmin::text::bigint")
    return sql.SQL(
        "((((({now}) >> 32) - CASE WHEN {raw} > (({now}) & 4294967295) THEN 1 ELSE 0 END) << 32)"
        " | {raw})::text::xid8"
    ).format(now=now, raw=raw)


_ROW_XID = _xid8_sql()


def _in_progress(snapshot: Any) -> Any:
    """The row was written by a transaction in progress in ``snapshot``."""
    from psycopg2 import sql

    return sql.SQL(
        "({x} >= pg_snapshot_xmin({s}::pg_snapshot) AND {x} < pg_snapshot_xmax({s}::pg_snapshot)"
        " AND NOT pg_visible_in_snapshot({x}, {s}::pg_snapshot))"
    ).format(x=_ROW_XID, s=snapshot)


def _read(cur: Any, query: Any) -> tuple[int | None, str, int, int]:
    cur.execute(query)
    seq, snapshot, xmin, xmax = cur.fetchone()
    return (int(seq) if seq is not None else None), str(snapshot), int(xmin), int(xmax)


def take_sink_position(
    pg: Any,
    table: Any,
    seq_column: str,
    base: SinkPosition | None,
    *,
    probe_seconds: float = PROBE_SECONDS,
) -> SinkPosition:
    """Read the sink's position for a new run (see the module docstring).

    :param pg: an open psycopg2 connection to the sink database.
    :param table: the table as a ``sql.Identifier``.
    :param seq_column: the ingest sequence column.
    :param base: the position the previous run recorded (None on the first run, or when it
        recorded no snapshot).
    :param probe_seconds: how long to wait for transactions older than the probe.
    """
    from psycopg2 import sql

    # One statement, one snapshot: the sequence seen and the snapshot agree.
    query = sql.SQL(
        "SELECT (SELECT max({seq}) FROM {t}), s::text, pg_snapshot_xmin(s)::text::bigint, "
        "pg_snapshot_xmax(s)::text::bigint FROM (SELECT pg_current_snapshot() AS s) c"
    ).format(seq=sql.Identifier(seq_column), t=table)
    with pg.cursor() as cur:
        probe_seq, _, _, probe_xmax = _read(cur, query)
        deadline = time.monotonic() + probe_seconds
        while True:
            seq, snapshot, xmin, xmax = _read(cur, query)
            if xmin == xmax:  # nothing in progress: every sequence drawn so far is settled
                floor = seq
                break
            if xmin >= probe_xmax:  # all in progress began after the probe
                floor = probe_seq
                break
            if time.monotonic() >= deadline:
                floor = _fallback_floor(xmin, base)
                break
            time.sleep(0.05)
    pg.rollback()
    return SinkPosition(seq=seq, snapshot=snapshot, floor=floor)


def _fallback_floor(xmin: int, base: SinkPosition | None) -> int | None:
    """A transaction older than the probe is open: the previous run's sequence when it began
    after that run's snapshot, else the previous floor (None: from the start)."""
    if base is None or base.snapshot is None:
        return None
    base_xmax = int(base.snapshot.split(":")[1])
    if xmin >= base_xmax:
        return base.seq
    return base.floor
