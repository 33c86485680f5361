"""Where a run stands in a sink without ingest sequence (``sink.incremental: xmin``).

A table written by another tool (a Kafka Connect JDBC sink, a stream processor's PostgreSQL sink,
a hand-written consumer) often has no sequence column. PostgreSQL still says which transaction
wrote each row version: ``xmin``. Each run records the database's snapshot
(``pg_current_snapshot()``) and reads the rows whose writing transaction is visible in its own
snapshot and not older than the previous snapshot's ``xmin`` (the oldest transaction then in
progress), plus every row of the messages those rows carry
(:meth:`recon.snapshot.sink_position.SinkRange.changed_where`):

* a transaction still open at the previous snapshot is read by the first run that sees it
  committed, the late-commit guarantee of the ingest sequence;
* an updated row has a new ``xmin`` and is read again; the rules compare each message's rows
  with its ledger entry's count (``00_scan_*``), so a row read twice is never a duplicate.

``xmin`` is 32 bits; a row's 64-bit id is rebuilt from the current epoch
(``sink_position._xid8_sql``), exact for any transaction less than 2^32 behind the current one.
Frozen rows keep their ``xmin`` (PostgreSQL 9.4 and later set a flag), so a row written since the
previous run is compared exactly even when frozen. The run reads the whole table instead, and
says why, when the previous snapshot cannot be trusted (:func:`full_copy_reason`).
"""

from __future__ import annotations

import time
from typing import Any

from recon.snapshot.sink_position import PROBE_SECONDS, SinkPosition

#: How far behind the current transaction the previous snapshot's horizon may be: PostgreSQL
#: itself never lets an unfrozen row's transaction fall 2^31 behind; past this margin below it,
#: the run reads the whole table.
HORIZON_LIMIT = 2**31 - 10_000_000


def _epoch_xid(raw: int, xmax: int) -> int:
    """A 32-bit transaction id as the 64-bit one at most 2^32 behind ``xmax``."""
    epoch = xmax >> 32
    if raw > (xmax & 0xFFFFFFFF):
        epoch -= 1
    return (epoch << 32) | raw


def take_sink_snapshot(
    pg: Any, table: Any, *, probe_seconds: float = PROBE_SECONDS
) -> tuple[SinkPosition, int | None]:
    """The database's snapshot for a new run of a sink read by ``xmin``, and the table's
    oldest unfrozen transaction (``relfrozenxid`` as a 64-bit id; None: the relation keeps no
    rows of its own, a view or a foreign table, so its rows have no ``xmin``).

    Like the ingest sequence's probe, it waits up to ``probe_seconds`` for the transactions in
    progress at a first look to end: the next run reads from this snapshot's ``xmin``, so a
    short transaction left open here would make it read again what committed meanwhile.

    :param pg: an open psycopg2 connection to the sink database.
    :param table: the table as a ``sql.Identifier``.
    """
    from psycopg2 import sql

    query = sql.SQL(
        "SELECT s::text, pg_snapshot_xmin(s)::text::bigint, pg_snapshot_xmax(s)::text::bigint, "
        "(SELECT CASE WHEN relkind IN ('r', 'p', 'm') THEN relfrozenxid::text::bigint END "
        "FROM pg_class WHERE oid = {t}::regclass) "
        "FROM (SELECT pg_current_snapshot() AS s) c"
    ).format(t=sql.Literal(table.as_string(pg)))
    with pg.cursor() as cur:
        cur.execute(query)
        probe_xmax = cur.fetchone()[2]
        deadline = time.monotonic() + probe_seconds
        while True:
            cur.execute(query)
            snapshot, xmin, xmax, frozen = cur.fetchone()
            if xmin == xmax or xmin >= probe_xmax or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
    pg.rollback()
    horizon = None if frozen is None else _epoch_xid(int(frozen), int(xmax))
    return SinkPosition(seq=None, snapshot=str(snapshot), floor=None), horizon


def full_copy_reason(previous: str | None, current: str, frozen_horizon: int | None) -> str | None:
    """Why this run reads the whole table instead of the rows changed since ``previous`` (None:
    it need not).

    :param previous: the snapshot of the run this one starts from (None: there is none).
    :param current: this run's snapshot.
    :param frozen_horizon: the table's ``relfrozenxid`` as a 64-bit id: every transaction
        below it is frozen in the table (None: a view or a foreign table, without ``xmin``).
    """
    if frozen_horizon is None:
        return "sink.table is a view or a foreign table: its rows carry no xmin"
    if previous is None:
        return "no earlier run recorded a snapshot of the sink"
    prev_xmin, prev_xmax = (int(part) for part in previous.split(":")[:2])
    xmax = int(current.split(":")[1])
    if prev_xmax > xmax:
        return (
            f"the previous snapshot (transaction {prev_xmax}) is ahead of the database "
            f"(transaction {xmax}): the sink database was restored or replaced"
        )
    if xmax - prev_xmin > HORIZON_LIMIT:
        return (
            f"the previous snapshot's horizon (transaction {prev_xmin}) is {xmax - prev_xmin} "
            "transactions behind: too old to compare xmin across wraparound"
        )
    if prev_xmin < frozen_horizon:
        return (
            f"the previous snapshot's horizon (transaction {prev_xmin}) is older than the "
            f"table's oldest unfrozen transaction ({frozen_horizon})"
        )
    return None
