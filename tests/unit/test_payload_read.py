"""Reading what ``payload`` compares: the record side (``records.payload``, extracted with the
messageId, once for both engines) and the sink side (the kinds of its columns, and the lists the
``COPY`` path builds from them)."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pyarrow as pa
import pytest

from recon.config import MessageIdSpec, OrderSpec, PayloadSpec
from recon.errors import SinkTableError
from recon.read.kafka_local.task import (
    order_from_json,
    order_json,
    payload_from_json,
    payload_json,
)
from recon.read.message_ids import extract_ids, raw_schema
from recon.read.sink_arrow import sink_rows_sql, sink_schema
from recon.read.sink_order import check_order_columns
from recon.read.sink_payload import kind_of, payload_kinds

pytestmark = pytest.mark.unit

TS = datetime(2026, 1, 1, tzinfo=UTC)
FIELDS = PayloadSpec((("amount", "amount"), ("customer.id", "customer_id"), ("tags", "tags")))
VALUES: list[bytes | None] = [
    b'{"id": "m1", "amount": 12.50, "customer": {"id": "c7"}, "tags": ["a"]}',
    b'{"id": "m2", "amount": null}',
    b"not json",
    None,
]


def _raw(values: list[bytes | None]) -> pa.Table:
    n = len(values)
    return pa.table(
        [pa.array(["t"] * n), pa.array([0] * n, pa.int32()), pa.array(range(n), pa.int64()),
         pa.array([TS] * n, pa.timestamp("ms", tz="UTC")), pa.array([None] * n, pa.binary()),
         pa.array(values, pa.binary()), pa.array([b"h"] * n, pa.binary()),
         pa.array([None] * n, pa.binary())],
        schema=raw_schema(),
    )  # fmt: skip


def test_fields_are_read_as_text_with_nulls_for_what_is_missing() -> None:
    rows = extract_ids(_raw(VALUES), MessageIdSpec("header", "id"), payload=FIELDS).to_pylist()
    assert [r["payload"] for r in rows] == [
        ["12.5", "c7", '["a"]'],
        [None, None, None],
        [None, None, None],  # not JSON: every field absent, so a sink value differs
        None,  # a tombstone is invalid, never compared
    ]


def test_fields_from_the_value_that_also_holds_the_id() -> None:
    rows = extract_ids(_raw(VALUES[:1]), MessageIdSpec("json_field", "id"), payload=FIELDS)
    assert rows.to_pylist()[0]["message_id"] == "m1"
    assert rows.to_pylist()[0]["payload"] == ["12.5", "c7", '["a"]']


def test_the_hash_is_the_sha256_of_the_raw_value_bytes() -> None:
    spec = PayloadSpec(sha256_column="h")
    rows = extract_ids(_raw(VALUES), MessageIdSpec("header", "id"), payload=spec).to_pylist()
    assert [r["payload"] for r in rows[:3]] == [
        [hashlib.sha256(v).hexdigest()] for v in VALUES[:3] if v is not None
    ]
    assert rows[3]["payload"] is None


def test_no_payload_no_column_values() -> None:
    rows = extract_ids(_raw(VALUES), MessageIdSpec("header", "id")).to_pylist()
    assert all(r["payload"] is None for r in rows)


def test_the_reader_task_carries_the_payload() -> None:
    assert payload_from_json(payload_json(FIELDS)) == FIELDS
    hashed = PayloadSpec(sha256_column="h")
    assert payload_from_json(payload_json(hashed)) == hashed
    assert payload_from_json(payload_json(None)) is None


@pytest.mark.parametrize(
    ("pg_type", "hashed", "kind"),
    [
        ("integer", False, "number"),
        ("numeric(12,2)", False, "number"),
        ("double precision", False, "number"),
        ("boolean", False, "boolean"),
        ("timestamp with time zone", False, "time"),
        ("timestamp(3) without time zone", False, "time"),
        ("date", False, "time"),
        ("text", False, "text"),
        ("character varying(20)", False, "text"),
        ("uuid", False, "text"),
        ("jsonb", False, None),
        ("bytea", False, None),
        ("text[]", False, None),
        ("text", True, "sha256"),
        ("bytea", True, "sha256"),
        ("character(64)", True, "sha256"),
        ("integer", True, None),
    ],
)
def test_a_column_is_compared_by_its_type(pg_type: str, hashed: bool, kind: str | None) -> None:
    assert kind_of(pg_type, hashed) == kind


def test_a_refused_or_missing_column_is_named() -> None:
    columns = {"amount": "numeric(12,2)", "customer_id": "jsonb"}
    with pytest.raises(SinkTableError) as refused:
        payload_kinds(columns, FIELDS, "public.orders", "orders")
    assert str(refused.value) == (
        "pipeline 'orders': payload.fields.customer.id: column 'customer_id' of table "
        "public.orders is jsonb, expected a number, boolean, timestamp or text type (compare it "
        "through sha256_column instead)"
    )
    with pytest.raises(SinkTableError, match="payload.sha256_column: table public.orders has"):
        payload_kinds(columns, PayloadSpec(sha256_column="h"), "public.orders", "orders")


def test_the_copy_path_lists_the_payload_columns_in_declared_order() -> None:
    import duckdb

    batch = pa.record_batch(
        [pa.array(["k1", "k2"]), pa.array(["m1", "m2"]),
         pa.array([0, None], pa.timestamp("us", tz="UTC")),
         pa.array(["A", None]), pa.array([7, None], pa.int64()),
         pa.array(["1", "2"]), pa.array(["a", None])],
        schema=sink_schema(2),
    )  # fmt: skip
    con = duckdb.connect()
    con.register("with_payload", batch)
    con.register("plain", batch.select(range(5)))
    picked = "SELECT payload, order_key, order_position FROM ({})"
    rows = con.execute(picked.format(sink_rows_sql("with_payload", batch.schema.names))).fetchall()
    assert rows == [(["1", "a"], "A", 7), (["2", None], None, None)]
    plain = con.execute(picked.format(sink_rows_sql("plain", batch.schema.names[:5]))).fetchall()
    assert [r[0] for r in plain] == [None, None]


def test_the_order_key_and_position_are_read_with_the_id() -> None:
    values = [b'{"account": "A", "version": 9}', b'{"account": "B", "version": "x"}', b"{}"]
    raw = _raw(values)
    by_field = OrderSpec(MessageIdSpec("json_field", "account"), "k", "p", "version")
    rows = extract_ids(raw, MessageIdSpec("header", "id"), order=by_field).to_pylist()
    # A version that is no whole number takes no part: null, as a missing key.
    assert [(r["order_key"], r["order_position"]) for r in rows] == [
        ("A", 9),
        ("B", None),
        (None, None),
    ]
    keyed = raw.set_column(4, "key", pa.array([b"K1", b"K2", None], pa.binary()))
    by_offset = OrderSpec(MessageIdSpec("key"), "k", "p")
    rows = extract_ids(keyed, MessageIdSpec("header", "id"), order=by_offset).to_pylist()
    assert [(r["order_key"], r["order_position"]) for r in rows] == [
        ("K1", 0),
        ("K2", 1),
        (None, 2),
    ]
    # A header, as a producer that keeps the key out of the value and the record key sets it;
    # one not UTF-8 is no key.
    headed = raw.set_column(7, "key_header", pa.array([b"H1", b"\xff", None], pa.binary()))
    by_header = OrderSpec(MessageIdSpec("header", "account"), "k", "p")
    rows = extract_ids(headed, MessageIdSpec("header", "id"), order=by_header).to_pylist()
    assert [(r["order_key"], r["order_position"]) for r in rows] == [
        ("H1", 0),
        (None, 1),
        (None, 2),
    ]
    for spec in (by_field, by_header):
        assert order_from_json(order_json(spec)) == spec
    assert order_from_json(order_json(None)) is None


@pytest.mark.parametrize(
    ("pg_type", "refused"),
    [("bigint", False), ("integer", False), ("numeric(20,0)", False), ("text", True),
     ("numeric(12,2)", True), ("timestamp with time zone", True)],
)  # fmt: skip
def test_an_order_position_must_be_a_whole_number(pg_type: str, refused: bool) -> None:
    order = OrderSpec(MessageIdSpec("key"), "account", "pos")
    columns = {"account": "text", "pos": pg_type}
    if refused:
        with pytest.raises(SinkTableError, match="order.position_column: column 'pos'"):
            check_order_columns(columns, order, "public.t", "p")
    else:
        check_order_columns(columns, order, "public.t", "p")
    with pytest.raises(SinkTableError, match="order.key_column: table public.t has no"):
        check_order_columns({"pos": "bigint"}, order, "public.t", "p")
