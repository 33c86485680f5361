"""Payload numbers compare exactly by value (issue 70, item 4): digits a double cannot hold still
count (``12345678901234567890`` is not ``12345678901234567891``), while texts of one value stay
equal (``10``, ``10.0``, ``1e1``). The comparison is judged by DuckDB here, on one scenario with a
pair per message (``fixtures.payload_numbers``; Spark's in ``tests/integration``); the record side
keeps every digit it read from the JSON value (one reading for both engines)."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest
from fixtures.payload_numbers import expected, scenario
from fixtures.relations import judged_rows

from recon.config import MessageIdSpec, PayloadSpec
from recon.read.message_ids import extract_ids, raw_schema

pytestmark = pytest.mark.unit


def test_numbers_compare_exactly_by_value() -> None:
    verdicts = {r["message_id"]: r["verdict"] for r in judged_rows("duckdb", None, scenario())}
    assert verdicts == expected()


def _raw(values: list[bytes]) -> pa.Table:
    n = len(values)
    ts = datetime(2026, 1, 1, tzinfo=UTC)
    return pa.table(
        [pa.array(["t"] * n), pa.array([0] * n, pa.int32()), pa.array(range(n), pa.int64()),
         pa.array([ts] * n, pa.timestamp("ms", tz="UTC")), pa.array([None] * n, pa.binary()),
         pa.array(values, pa.binary()), pa.array([b"h"] * n, pa.binary()),
         pa.array([None] * n, pa.binary())],
        schema=raw_schema(),
    )  # fmt: skip


FIELDS = PayloadSpec(
    (("amount", "amount"), ("order.total", "total"), ("order", "o"), ("note", "n"))
)


def test_the_record_keeps_every_digit_of_its_numbers() -> None:
    values = [
        b'{"id": "m0", "amount": 0.12345678901234567890123, "order": {"total": 1e-400, '
        b'"n": 12345678901234567890.5, "r": "a,12345678901234567.5"}, '
        b'"note": "0.12345678901234567890123"}',
        b'{"id": "m1", "amount": 12345678901234567891, "order": {"total": 9007199254740993, '
        b'"x": "\\"1.0000000000000000001\\""}, "note": 1.5}',
        b'{"id": "m2", "amount": 12.50, "order": {"total": 1E+2}, "note": "x"}',
        b'{"id": "m3", "amount": -1.000000000000000000001e-5, "order": {"total": 1.5, "s": '
        b'"\\u0001"}, "note": "\\u00011234567890123456789"}',
        b'{"id": "m4", "amount": 0.1000000000000000000001',
    ]
    for spec in (MessageIdSpec("header", "id"), MessageIdSpec("json_field", "id")):
        rows = extract_ids(_raw(values), spec, payload=FIELDS).to_pylist()
        assert [r["payload"] for r in rows] == [
            [
                "0.12345678901234567890123",
                "1e-400",
                '{"total":1e-400,"n":12345678901234567890.5,"r":"a,12345678901234567.5"}',
                "0.12345678901234567890123",
            ],
            [
                "12345678901234567891",
                "9007199254740993",
                '{"total":9007199254740993,"x":"\\"1.0000000000000000001\\""}',
                "1.5",
            ],
            # nothing beyond a double's digits: read as before (a number as DuckDB prints it)
            ["12.5", "100.0", '{"total":100.0}', "x"],
            # a string that starts like a marked number is left as it is
            [
                "-1.000000000000000000001e-5",
                "1.5",
                '{"total":1.5,"s":"\\u0001"}',
                "\x011234567890123456789",
            ],
            [None, None, None, None],  # not JSON
        ]
        if spec.kind == "json_field":
            assert [r["message_id"] for r in rows[:4]] == ["m0", "m1", "m2", "m3"]
