"""The sink side of ``payload`` on a real PostgreSQL: each column type travels as the text its
kind compares (the ``COPY`` path both engines read where the data directory is local, as DuckDB
and as Spark read it, and the JDBC path of the Spark engine elsewhere give the same rows), the
kinds come from the catalog, and a column no kind fits is refused naming the pipeline and the
column."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import psycopg2
import pyarrow.parquet as pq
import pytest

from recon.config import MessageIdSpec, OrderSpec, PayloadSpec, SinkSpec
from recon.config.connections import postgres_connection
from recon.errors import SinkTableError
from recon.read.sink import inspect_sink, read_sink_rows, sink_query
from recon.read.sink_arrow import copy_sink_rows, sink_rows_sql
from recon.read.sink_copy import ROWS_FILE, read_sink_copy

pytestmark = pytest.mark.integration

COLUMNS = {
    "amount": "numeric(12,2)",
    "ok": "boolean",
    "at": "timestamptz",
    "naive": "timestamp",
    "note": "text",
    "ref": "uuid",
    "digest": "bytea",
    "doc": "jsonb",
    "pos": "bigint",
}
FIELDS = PayloadSpec(
    (("amount", "amount"), ("ok", "ok"), ("at", "at"), ("naive", "naive"), ("note", "note"),
     ("ref", "ref"))
)  # fmt: skip
EXPECTED = [
    "12.50",
    "true",
    "2026-11-26T03:00:00.123+00:00",
    "2026-11-26T03:00:00+00:00",
    "it's",
    "0b9e1c6a-1f2a-4c3b-9d4e-5f60718293a4",
]


@pytest.fixture
def table(pg_kwargs: dict[str, Any]) -> Iterator[str]:
    name = f"payload_{uuid.uuid4().hex[:8]}"
    columns = ", ".join(f"{c} {t}" for c, t in COLUMNS.items())
    with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute("SET TIME ZONE 'Europe/Paris'")  # the session's zone must not matter
        cur.execute(f"CREATE TABLE {name} (id bigint PRIMARY KEY, message_id text, {columns})")
        cur.execute(
            f"INSERT INTO {name} VALUES (1, 'm1', 12.50, true, "
            "'2026-11-26 04:00:00.123+01', '2026-11-26 03:00:00', 'it''s', "
            "'0b9e1c6a-1f2a-4c3b-9d4e-5f60718293a4', '\\xAB12'::bytea, '{\"a\": 1}', 41), "
            "(2, 'm2', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)"
        )
    yield name
    with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(f"DROP TABLE {name}")


def _spec(table: str) -> SinkSpec:
    return SinkSpec("postgres_sink", table, "message_id")


def test_copy_and_jdbc_read_the_same_texts(
    table: str, pg_kwargs: dict[str, Any], tmp_path: Path, spark: Any
) -> None:
    with psycopg2.connect(**pg_kwargs) as pg:
        inspected = inspect_sink(pg, _spec(table), "p", FIELDS)
        assert inspected.payload_kinds == ("number", "boolean", "time", "time", "text", "text")
        copy_sink_rows(pg, _spec(table), inspected, None, str(tmp_path / "s.parquet"), FIELDS)
        query = sink_query(pg, _spec(table), inspected, None, FIELDS)
    # What the local engine's rules read: the file's payload columns as one list per row.
    written = pq.read_table(tmp_path / "s.parquet")
    rows = duckdb.connect().execute(
        f"SELECT message_id, payload FROM ({sink_rows_sql('written', written.schema.names)})"
    )
    copied = dict(rows.fetchall())
    assert copied == {"m1": EXPECTED, "m2": [None] * len(EXPECTED)}
    frame = read_sink_rows(spark, postgres_connection("postgres_sink"), query, None, None)
    read = {r["message_id"]: r["payload"] for r in frame.collect()}
    assert read == copied


def test_spark_reads_the_copy_as_it_reads_jdbc(
    table: str, pg_kwargs: dict[str, Any], tmp_path: Path, spark: Any
) -> None:
    """Every column the rules read, with a time, compared fields and an upsert's order declared:
    the Spark engine's read of step 2's copy (``recon.read.sink_copy``) and its JDBC read."""
    order = OrderSpec(MessageIdSpec("key"), "note", "pos")
    spec = SinkSpec("postgres_sink", table, "message_id", time_column="at")
    with psycopg2.connect(**pg_kwargs) as pg:
        inspected = inspect_sink(pg, spec, "p", FIELDS, order)
        (tmp_path / "copy").mkdir()
        copy_sink_rows(pg, spec, inspected, None, str(tmp_path / "copy" / ROWS_FILE), FIELDS, order)
        query = sink_query(pg, spec, inspected, None, FIELDS, order)
    columns = ["sink_key", "message_id", "sink_time", "payload", "order_key", "order_position"]
    copied = read_sink_copy(spark, str(tmp_path / "copy")).select(*columns)
    jdbc = read_sink_rows(spark, postgres_connection("postgres_sink"), query, None, None)
    types = [(f.name, f.dataType) for f in copied.schema]
    assert types == [(f.name, f.dataType) for f in jdbc.select(*columns).schema]
    read = {r["message_id"]: r.asDict() for r in copied.collect()}
    assert read == {r["message_id"]: r.asDict() for r in jdbc.select(*columns).collect()}
    assert read["m1"]["payload"] == EXPECTED
    assert (read["m1"]["order_key"], read["m1"]["order_position"]) == ("it's", 41)


@pytest.mark.parametrize("column", ["at", "naive"])
def test_the_sink_time_is_read_to_the_microsecond(
    table: str, pg_kwargs: dict[str, Any], tmp_path: Path, column: str, spark: Any
) -> None:
    """Both engines' reads give the same time: exact to the microsecond (a zoneless one read as
    UTC), null for a null time and for an infinite one, which has no instant (the local engine's
    COPY carries it as a number, the Spark engine's JDBC read as a timestamp)."""
    with psycopg2.connect(**pg_kwargs) as pg:
        with pg.cursor() as cur:
            cur.execute(
                f"INSERT INTO {table} (id, message_id, {column}) VALUES "
                "(3, 'm3', '2026-11-26 03:00:00.000001+00'), (4, 'm4', 'infinity')"
            )
        pg.commit()
        spec = SinkSpec("postgres_sink", table, "message_id", time_column=column)
        inspected = inspect_sink(pg, spec, "p")
        copy_sink_rows(pg, spec, inspected, None, str(tmp_path / "s.parquet"))
        query = sink_query(pg, spec, inspected, None)
    frame = read_sink_rows(spark, postgres_connection("postgres_sink"), query, None, None)
    read = dict(frame.selectExpr("message_id", "unix_micros(sink_time)").collect())
    times = {
        r["message_id"]: r["sink_time"] for r in pq.read_table(tmp_path / "s.parquet").to_pylist()
    }
    utc = dt.UTC
    first = dt.datetime(2026, 11, 26, 3, 0, 0, 123000 if column == "at" else 0, tzinfo=utc)
    assert times == {
        "m1": first,
        "m2": None,
        "m3": dt.datetime(2026, 11, 26, 3, 0, 0, 1, tzinfo=utc),
        "m4": None,
    }
    epoch = dt.datetime(1970, 1, 1, tzinfo=utc)
    assert read == {
        m: None if t is None else (t - epoch) // dt.timedelta(microseconds=1)
        for m, t in times.items()
    }


def test_a_bytea_digest_travels_as_lower_hex(table: str, pg_kwargs: dict[str, Any]) -> None:
    hashed = PayloadSpec(sha256_column="digest")
    with psycopg2.connect(**pg_kwargs) as pg:
        inspected = inspect_sink(pg, _spec(table), "p", hashed)
        assert inspected.payload_kinds == ("sha256",)
        query = sink_query(pg, _spec(table), inspected, None, hashed)
        with pg.cursor() as cur:
            cur.execute(f"SELECT message_id, payload FROM ({query}) q ORDER BY 1")
            assert cur.fetchall() == [("m1", ["ab12"]), ("m2", [None])]


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        (
            PayloadSpec((("doc", "doc"),)),
            "pipeline 'p': payload.fields.doc: column 'doc' of table public.{t} is jsonb, expected "
            "a number, boolean, timestamp or text type (compare it through sha256_column instead)",
        ),
        (
            PayloadSpec((("x", "nope"),)),
            "pipeline 'p': payload.fields.x: table public.{t} has no column 'nope'",
        ),
        (
            PayloadSpec(sha256_column="amount"),
            "pipeline 'p': payload.sha256_column: column 'amount' of table public.{t} is "
            "numeric(12,2), expected text or bytea (the hex SHA-256 of the raw value)",
        ),
    ],
)
def test_a_column_the_comparison_cannot_read_is_refused(
    table: str, pg_kwargs: dict[str, Any], payload: PayloadSpec, error: str
) -> None:
    with psycopg2.connect(**pg_kwargs) as pg, pytest.raises(SinkTableError) as refused:
        inspect_sink(pg, _spec(table), "p", payload)
    assert str(refused.value) == error.format(t=table)


def test_an_upsert_sinks_key_and_position_are_read_by_both_paths(
    table: str, pg_kwargs: dict[str, Any], tmp_path: Path, spark: Any
) -> None:
    order = OrderSpec(MessageIdSpec("key"), "note", "pos")
    with psycopg2.connect(**pg_kwargs) as pg:
        inspected = inspect_sink(pg, _spec(table), "p", order=order)
        copy_sink_rows(pg, _spec(table), inspected, None, str(tmp_path / "o.parquet"), order=order)
        query = sink_query(pg, _spec(table), inspected, None, order=order)
        with pytest.raises(SinkTableError, match="order.position_column: column 'note'"):
            inspect_sink(
                pg, _spec(table), "p", order=OrderSpec(MessageIdSpec("key"), "pos", "note")
            )
    copied = pq.read_table(tmp_path / "o.parquet").to_pylist()
    assert {r["message_id"]: (r["order_key"], r["order_position"]) for r in copied} == {
        "m1": ("it's", 41),
        "m2": (None, None),
    }
    frame = read_sink_rows(spark, postgres_connection("postgres_sink"), query, None, None)
    assert {r["message_id"]: (r["order_key"], r["order_position"]) for r in frame.collect()} == {
        "m1": ("it's", 41),
        "m2": (None, None),
    }
