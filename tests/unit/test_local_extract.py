"""The local engine's id extraction quarantines exactly what the Spark engine's does.

Every kind of id location gets the same raw records, good and bad; both engines must give the
same messageId or the same ``invalid_reason`` for every offset.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pytest

from recon.config import MessageIdSpec
from recon.read.kafka_spark import MAX_MESSAGE_ID_LENGTH, extract_message_ids
from recon.read.message_ids import extract_ids, raw_schema

pytestmark = pytest.mark.unit

TS = datetime(2026, 1, 1, tzinfo=UTC)
LONG = "é" * MAX_MESSAGE_ID_LENGTH  # 512 characters, 1024 bytes: still an id

VALUES: list[bytes | None] = [
    b'{"id": "m-1", "x": 1}', b'{"id": 42}', b'{"id": 4.50}', b'{"id": true}', b'{"id": null}',
    b'{"x": 1}', b"not json", b"\xff\xfe", None, b'{"id": ""}', b'{"id": "   "}',
    b'{"id": {"a": 1}}', b'{"id": [1, 2]}', b'{"id": "[a"}', b'{"id": "{b"}', b'[1, 2]', b'"text"',
    ('{"id": "' + "x" * 600 + '"}').encode(), ('{"id": "' + LONG + '"}').encode(),
    b'{"id": "caf\\u00e9"}', b'{"id": " lead"}', b'{"id": "tab\\there"}', b"",
]  # fmt: skip
IDS: list[bytes | None] = [
    b"m-1",
    None,
    b"",
    b"  ",
    b"\xff\xfe",
    b"x" * 600,
    LONG.encode(),
    b" lead",
    b"caf\xc3\xa9",
]


def _spark_raw(spark: Any, rows: list[tuple[Any, ...]]) -> Any:
    schema = (
        "topic string, partition int, offset long, timestamp timestamp, key binary, "
        "value binary, headers array<struct<key:string,value:binary>>"
    )
    return spark.createDataFrame(rows, schema)


def _arrow_raw(rows: list[tuple[Any, ...]], header: str | None) -> pa.Table:
    def first(headers: list[tuple[str, bytes]] | None) -> bytes | None:
        return next((v for k, v in headers or () if k == header), None)

    columns = list(zip(*rows, strict=True))
    return pa.table(
        [pa.array(columns[0]), pa.array(columns[1], pa.int32()), pa.array(columns[2], pa.int64()),
         pa.array(columns[3], pa.timestamp("ms", tz="UTC")), pa.array(columns[4], pa.binary()),
         pa.array(columns[5], pa.binary()),
         pa.array([first(h) for h in columns[6]], pa.binary())],
        schema=raw_schema(),
    )  # fmt: skip


def _both(spark: Any, rows: list[tuple[Any, ...]], spec: MessageIdSpec) -> tuple[dict, dict]:
    theirs = {
        r.offset: (r.message_id, r.invalid_reason)
        for r in extract_message_ids(_spark_raw(spark, rows), spec).collect()
    }
    local = extract_ids(_arrow_raw(rows, spec.name if spec.kind == "header" else None), spec)
    ours = {
        o: (m, r)
        for o, m, r in zip(
            local["offset"].to_pylist(), local["message_id"].to_pylist(),
            local["invalid_reason"].to_pylist(), strict=True,
        )
    }  # fmt: skip
    return ours, theirs


def test_json_field_ids_match_the_spark_engine(spark: Any) -> None:
    rows = [("t", 0, i, TS, None, v, []) for i, v in enumerate(VALUES)]
    ours, theirs = _both(spark, rows, MessageIdSpec("json_field", "id"))
    assert ours == theirs


def test_key_ids_match_the_spark_engine(spark: Any) -> None:
    rows = [("t", 1, i, TS, k, b"{}", []) for i, k in enumerate(IDS)]
    rows.append(("t", 1, len(rows), TS, b"k", None, []))  # a tombstone
    ours, theirs = _both(spark, rows, MessageIdSpec("key"))
    assert ours == theirs


def test_header_ids_match_the_spark_engine(spark: Any) -> None:
    rows = [("t", 2, i, TS, None, b"{}", [("message_id", h)]) for i, h in enumerate(IDS)]
    rows += [
        ("t", 2, 100, TS, None, b"{}", [("other", b"x")]),
        ("t", 2, 101, TS, None, b"{}", [("trace", b"t"), ("message_id", b"m-101")]),
        ("t", 2, 102, TS, None, b"{}", [("message_id", b"first"), ("message_id", b"second")]),
        ("t", 2, 103, TS, None, None, [("message_id", b"m-103")]),
    ]
    ours, theirs = _both(spark, rows, MessageIdSpec("header", "message_id"))
    assert ours == theirs
