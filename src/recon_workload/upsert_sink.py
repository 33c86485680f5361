"""The upsert sink: one PostgreSQL row per account, rewritten by every record of that account.

Unlike the shared sink table (:mod:`recon_workload.sink`, one row per write, read by ingest
sequence), an upsert sink keeps only the last write per key, so it has no ingest sequence and is
read whole. Each row names the record it was last written from: its messageId
(``message_id``) and its position (``applied_offset``, the record's Kafka offset; a key's
records share a partition, ``kafka_partition``). A pipeline over it declares
``order: {key_column: account, position_column: applied_offset}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from psycopg2 import sql
from psycopg2.extras import execute_batch

from recon_workload.sink import SinkRow, value_fields

#: The sink column holding each row's key: what a pipeline declares as ``order.key_column``.
KEY_COLUMN = "account"
#: The sink column holding the Kafka offset of the record a row was last written from: what a
#: pipeline declares as ``order.position_column``.
POSITION_COLUMN = "applied_offset"


@dataclass(frozen=True)
class UpsertRow:
    """One row of the upsert sink (as written, or as read back with its ``written_at``).

    :param account: the key (the record's Kafka key).
    :param message_id: the messageId of the record the row was last written from.
    :param applied_offset: that record's Kafka offset (in ``partition``).
    """

    account: str
    message_id: str | None
    partition: int
    applied_offset: int
    seq: int | None = None
    payload: str | None = None
    written_at: datetime | None = None

    @classmethod
    def of(
        cls,
        account: str,
        message_id: str | None,
        partition: int,
        offset: int,
        value: bytes | None,
    ) -> UpsertRow:
        """The row an upsert of the record at ``partition``/``offset`` with ``value`` leaves.

        :param account: the record's key.
        """
        seq, payload = value_fields(value)
        return cls(account, message_id, partition, offset, seq, payload)

    def as_sink_row(self, topic: str) -> SinkRow:
        """The row as the ledger counts sink rows: one row of its messageId, at its record's
        position (an upsert sink keeps no hash of the value)."""
        return SinkRow(
            self.message_id,
            topic,
            self.partition,
            self.applied_offset,
            None,
            self.written_at,
            self.seq,
            self.payload,
        )


def create_table(cur: Any, table: str) -> None:
    """(Re)create the upsert sink ``public.<table>`` (same name as a run's shared sink table,
    so :func:`recon_workload.sink.drop_tables` removes it with the run).

    ``written_at`` is set on insert and on every update (``clock_timestamp()``: the moment of
    the write, not of the transaction's start).
    """
    ident = sql.Identifier("public", table)
    cur.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(ident))
    cur.execute(
        sql.SQL(
            "CREATE TABLE {} (account text PRIMARY KEY, message_id text,"
            " kafka_partition int NOT NULL, applied_offset bigint NOT NULL,"
            " seq bigint, payload text,"
            " written_at timestamptz NOT NULL DEFAULT clock_timestamp())"
        ).format(ident)
    )


# No version check on purpose: whichever write comes last wins, as in a naive upsert consumer.
_UPSERT = (
    "INSERT INTO {} (account, message_id, kafka_partition, applied_offset, seq, payload)"
    " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (account) DO UPDATE SET"
    " message_id = EXCLUDED.message_id, kafka_partition = EXCLUDED.kafka_partition,"
    " applied_offset = EXCLUDED.applied_offset, seq = EXCLUDED.seq,"
    " payload = EXCLUDED.payload, written_at = clock_timestamp()"
)


def upsert_rows(cur: Any, table: str, rows: Sequence[UpsertRow]) -> None:
    """Write ``rows`` one after the other, in order (in the caller's transaction): each insert
    of a new account, or overwrite of its row, whatever that row held.

    One statement per row, not one multi-row ``INSERT``: a batch may hold two records of one
    account, and PostgreSQL refuses to update a row twice in one statement.
    """
    if not rows:
        return
    query = sql.SQL(_UPSERT).format(sql.Identifier("public", table)).as_string(cur)
    execute_batch(
        cur,
        query,
        [(r.account, r.message_id, r.partition, r.applied_offset, r.seq, r.payload) for r in rows],
    )


def read_rows(cur: Any, table: str) -> list[UpsertRow]:
    """Every row of the upsert sink, by account."""
    cur.execute(
        sql.SQL(
            "SELECT account, message_id, kafka_partition, applied_offset, seq, payload,"
            " written_at FROM {} ORDER BY account"
        ).format(sql.Identifier("public", table))
    )
    return [UpsertRow(*r) for r in cur.fetchall()]
