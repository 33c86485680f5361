"""The sink: one PostgreSQL table per run in ``recon_sink``, plus the consumers' bookkeeping tables.

The sink row keeps what the consumer got: the messageId it could read (``NULL`` when it could
not), the record's position, a hash of the value and the value's ``seq`` and ``payload`` fields
(what a pipeline's ``payload.fields`` compares with the record). ``id`` is the ingest sequence
and ``written_at`` the moment the row was inserted (the time column a latency check reads).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg2
from psycopg2 import sql
from psycopg2.extras import execute_values

from recon.config.connections import postgres_connection

PG_CONN_ID = "postgres_sink"
#: The sink column with each row's write time: what a pipeline declares as ``sink.time_column``.
TIME_COLUMN = "written_at"
#: The sink column with the hex SHA-256 of the value bytes the row was written from: what a
#: pipeline declares as ``payload.sha256_column``.
SHA256_COLUMN = "payload_sha256"
#: The JSON fields of a good message's value each sink row keeps, with the column each lands in
#: (a pipeline's ``payload.fields``).
PAYLOAD_COLUMNS = {"seq": "seq", "payload": "payload"}
# A bigint column holds no more than this.
_BIGINT_MAX = 2**63 - 1


def connect() -> Any:
    """A new connection to the sink database (``postgres_sink``)."""
    return psycopg2.connect(**postgres_connection(PG_CONN_ID).psycopg2_kwargs())


@contextmanager
def transaction() -> Iterator[Any]:
    """A cursor in one transaction on a fresh connection: committed on success, then closed."""
    db = connect()
    try:
        with db, db.cursor() as cur:
            yield cur
    finally:
        db.close()


@dataclass(frozen=True)
class SinkRow:
    message_id: str | None
    topic: str
    partition: int
    offset: int
    payload_sha256: str | None
    written_at: datetime | None = None  # set by PostgreSQL; only rows read back carry it
    seq: int | None = None
    payload: str | None = None

    @classmethod
    def of(
        cls, message_id: str | None, topic: str, partition: int, offset: int, value: bytes | None
    ) -> SinkRow:
        """The row a consumer writes for a record with ``value``: its hash, and its ``seq`` and
        ``payload`` fields (``None`` where the value is not a JSON object holding them)."""
        digest = hashlib.sha256(value).hexdigest() if value is not None else None
        seq, payload = value_fields(value)
        return cls(message_id, topic, partition, offset, digest, None, seq, payload)


def value_fields(value: bytes | None) -> tuple[int | None, str | None]:
    """The ``seq`` (an integer that fits a bigint) and ``payload`` (a string PostgreSQL can
    store as text) of a JSON object value; ``None`` for each one it does not hold like that.

    Lenient on purpose: the consumers also write the bad records (not UTF-8, not JSON, a
    tombstone), and a row must still be written for them.
    """
    if not value:
        return None, None
    try:
        doc = json.loads(value.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None, None
    if not isinstance(doc, dict):
        return None, None
    seq, payload = doc.get("seq"), doc.get("payload")
    good_seq = isinstance(seq, int) and not isinstance(seq, bool) and abs(seq) <= _BIGINT_MAX
    # PostgreSQL text cannot hold NUL.
    good_payload = isinstance(payload, str) and "\x00" not in payload
    return (seq if good_seq else None), (payload if good_payload else None)


def create_tables(cur: Any, table: str, aux: Iterable[str] = ()) -> None:
    """(Re)create the sink table and the named bookkeeping tables, all in schema ``public``.

    :param aux: ``processed`` (idempotent consumer), ``offsets`` (transactional sink) and/or
        ``outbox`` (the application's transactional outbox, the source of the outbox scenarios).
    """
    ident = sql.Identifier("public", table)
    cur.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(ident))
    cur.execute(
        sql.SQL(
            "CREATE TABLE {} (id bigserial PRIMARY KEY, message_id text, kafka_topic text,"
            " kafka_partition int, kafka_offset bigint, payload_sha256 text,"
            " seq bigint, payload text,"
            " ingested_at timestamptz NOT NULL DEFAULT now(),"
            # clock_timestamp(), not now(): now() is the transaction's start, shared by a whole
            # batch and blind to how long the transaction stayed open before the insert.
            " written_at timestamptz NOT NULL DEFAULT clock_timestamp())"
        ).format(ident)
    )
    for suffix in aux:
        aux_ident = sql.Identifier("public", f"{table}_{suffix}")
        cur.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(aux_ident))
        if suffix == "processed":
            ddl = (
                "CREATE TABLE {} (message_id text PRIMARY KEY,"
                " processed_at timestamptz NOT NULL DEFAULT now())"
            )
        elif suffix == "offsets":
            ddl = (
                "CREATE TABLE {} (kafka_topic text, kafka_partition int, next_offset bigint"
                " NOT NULL, PRIMARY KEY (kafka_topic, kafka_partition))"
            )
        elif suffix == "outbox":
            # The messageId the application gives each row is unique, as in an outbox keyed by
            # it: the reconciliation takes the catalog's word that no id is named twice.
            ddl = (
                "CREATE TABLE {} (seq bigserial PRIMARY KEY, message_id text UNIQUE,"
                " created_at timestamptz NOT NULL DEFAULT clock_timestamp())"
            )
        else:
            raise ValueError(f"unknown bookkeeping table {suffix!r}")
        cur.execute(sql.SQL(ddl).format(aux_ident))


def drop_tables(cur: Any, table: str) -> None:
    """Drop a run's sink, bookkeeping and outbox tables if they exist."""
    # _other: the fan-out consumer's second table (recon_workload.scenarios_diverted)
    for name in (table, f"{table}_processed", f"{table}_offsets", f"{table}_outbox",
                 f"{table}_other"):  # fmt: skip
        cur.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier("public", name)))


def insert_rows(cur: Any, table: str, rows: Sequence[SinkRow]) -> None:
    """Append rows to the sink (in the caller's transaction)."""
    if not rows:
        return
    query = sql.SQL(
        "INSERT INTO {} (message_id, kafka_topic, kafka_partition, kafka_offset, payload_sha256,"
        " seq, payload) VALUES %s"
    ).format(sql.Identifier("public", table))
    execute_values(
        cur,
        query.as_string(cur),
        [
            (r.message_id, r.topic, r.partition, r.offset, r.payload_sha256, r.seq, r.payload)
            for r in rows
        ],
    )


def claim_new_ids(cur: Any, table: str, ids: Sequence[str]) -> set[str]:
    """Record ids as processed; return those not seen before (the idempotent consumer's guard)."""
    if not ids:
        return set()
    query = sql.SQL(
        "INSERT INTO {} (message_id) VALUES %s ON CONFLICT DO NOTHING RETURNING message_id"
    ).format(sql.Identifier("public", f"{table}_processed"))
    rows = execute_values(cur, query.as_string(cur), [(i,) for i in ids], fetch=True)
    return {r[0] for r in rows}


def store_offsets(cur: Any, table: str, offsets: dict[tuple[str, int], int]) -> None:
    """Upsert the next offset to read per partition (the transactional sink's own progress)."""
    query = sql.SQL(
        "INSERT INTO {} (kafka_topic, kafka_partition, next_offset) VALUES %s"
        " ON CONFLICT (kafka_topic, kafka_partition)"
        " DO UPDATE SET next_offset = EXCLUDED.next_offset"
    ).format(sql.Identifier("public", f"{table}_offsets"))
    execute_values(cur, query.as_string(cur), [(t, p, o) for (t, p), o in offsets.items()])


def stored_offsets(cur: Any, table: str) -> dict[tuple[str, int], int]:
    """The transactional sink's stored next offsets."""
    cur.execute(
        sql.SQL("SELECT kafka_topic, kafka_partition, next_offset FROM {}").format(
            sql.Identifier("public", f"{table}_offsets")
        )
    )
    return {(t, p): o for t, p, o in cur.fetchall()}


def visible_by_partition(cur: Any, table: str) -> dict[int, tuple[int, int, int]]:
    """Per Kafka partition, the committed rows this transaction sees: (count, min id, max id)."""
    cur.execute(
        sql.SQL(
            "SELECT kafka_partition, count(*), min(id), max(id) FROM {} GROUP BY kafka_partition"
        ).format(sql.Identifier("public", table))
    )
    return {p: (n, lo, hi) for p, n, lo, hi in cur.fetchall()}


def read_rows(cur: Any, table: str) -> list[SinkRow]:
    """Every sink row, in ingest order."""
    cur.execute(
        sql.SQL(
            "SELECT message_id, kafka_topic, kafka_partition, kafka_offset, payload_sha256,"
            " written_at, seq, payload FROM {} ORDER BY id"
        ).format(sql.Identifier("public", table))
    )
    return [SinkRow(*r) for r in cur.fetchall()]


def _ident(table: str) -> sql.Identifier:
    """``schema.table`` or a bare name (schema ``public``) as one quoted identifier."""
    schema, _, name = table.rpartition(".")
    return sql.Identifier(schema or "public", name)


def insert_outbox(cur: Any, table: str, ids: Sequence[str]) -> None:
    """Append one outbox row per id, in order (in the caller's transaction).

    :param table: the outbox table, ``schema.table`` or bare (schema ``public``).
    """
    if ids:
        query = sql.SQL("INSERT INTO {} (message_id) VALUES %s").format(_ident(table))
        execute_values(cur, query.as_string(cur), [(i,) for i in ids])


def read_outbox(cur: Any, table: str) -> list[tuple[int, str | None]]:
    """Every outbox row as ``(seq, message_id)``, in ``seq`` order (what a relay publishes).

    :param table: the outbox table, ``schema.table`` or bare (schema ``public``).
    """
    cur.execute(sql.SQL("SELECT seq, message_id FROM {} ORDER BY seq").format(_ident(table)))
    return [(seq, mid) for seq, mid in cur.fetchall()]
