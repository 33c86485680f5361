"""The diverting consumers' pure parts (issue 72): the headers a Spring-style recoverer gives a
dead-letter record, read back by the product's dead-letter reader into the original's
coordinates and error; a retry hop keeps the first hop's; the fan-out's type (no Kafka, no
PostgreSQL)."""

from __future__ import annotations

import pytest
from confluent_kafka import Message

from recon.config import MessageIdSpec
from recon.config.diversions import PRESETS, DivertedSpec, OriginalHeaders
from recon.read.dead_letters import dead_letter_rows
from recon_workload.diverting import POISON_ERROR, record_type, spring_headers

pytestmark = pytest.mark.unit


def test_the_product_reads_the_recoverers_headers_back() -> None:
    original = Message(
        topic="orders", partition=2, offset=70_000, value=b'{"id": "m1"}',
        headers=[("message_id", b"m1")],
    )  # fmt: skip
    headers = spring_headers(original)
    assert headers[0] == ("message_id", b"m1")
    spec = DivertedSpec(("orders.DLT",), None, "spring", OriginalHeaders(*PRESETS["spring"]))
    (row,) = dead_letter_rows(
        [("orders.DLT", 0, 3, None, original.value(), headers)], spec,
        MessageIdSpec("header", "message_id"),
    ).to_pylist()  # fmt: skip
    assert (row["message_id"], row["orig_topic"], row["orig_partition"], row["orig_offset"]) == (
        "m1", "orders", 2, 70_000,
    )  # fmt: skip
    assert row["error"] == POISON_ERROR
    # the next hop (retry topic to dead-letter topic) keeps the first hop's original
    hop = Message(topic="orders-retry-0", partition=0, offset=5, headers=headers)
    assert spring_headers(hop) == headers


def test_a_records_type() -> None:
    assert record_type(b'{"id": "a", "type": "order"}') == "order"
    assert record_type(b'{"id": "a"}') is None
    assert record_type(b"[1]") is None
    assert record_type(b"\xff") is None
    assert record_type(None) is None


def test_the_ground_truth_of_diverted_and_excluded() -> None:
    from recon_workload.kafka_io import Position, ReadRecord
    from recon_workload.ledger import LedgerRow, summarize
    from recon_workload.scenarios_diverted import judge_diverted, judge_excluded

    at = Position("orders", 0, 1)
    entries = [
        LedgerRow("a", "a", True, [at], expected_verdict="lost"),
        LedgerRow("b", "b", True, [at], sink_rows=1, expected_verdict="delivered"),
        LedgerRow("c", "c", True, [at], expected_verdict="lost"),
    ]
    dead = [ReadRecord(Position("orders.DLT", 0, 7), "a", b"{}"),
            ReadRecord(Position("orders.DLT", 0, 8), "b", b"{}")]  # fmt: skip
    # a is diverted; b was written too (reprocessed): delivered; c stays lost
    assert judge_diverted(entries, dead) == 1
    assert [e.expected_verdict for e in entries] == ["diverted", "delivered", "lost"]
    assert entries[0].detail == "in orders.DLT/0@7"
    records = [
        ReadRecord(at, "b", b'{"type": "refund"}'),
        ReadRecord(at, "c", b'{"type": "order"}'),
    ]
    assert judge_excluded(entries, records, "order") == 1
    assert [e.expected_verdict for e in entries] == ["diverted", "excluded", "lost"]
    line = summarize(entries, 3, 3, 1).line("run")
    assert "diverted=1" in line and "excluded=1" in line
    assert "diverted" not in summarize(entries[2:], 1, 1, 0).line("run")
