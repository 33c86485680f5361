"""Dead-letter records as the rules' input ``dead_letters`` (issue 72): the original's
coordinates from Spring's binary headers and Connect's text ones, the error text, and the
messageId the record carries; a record naming nothing is kept with nulls, never dropped."""

from __future__ import annotations

import pytest

from recon.config import MessageIdSpec
from recon.config.diversions import PRESETS, DivertedSpec, OriginalHeaders
from recon.read.dead_letters import dead_letter_rows, decode_number

pytestmark = pytest.mark.unit

SPRING = DivertedSpec(("orders.DLT",), None, "spring", OriginalHeaders(*PRESETS["spring"]))
CONNECT = DivertedSpec(("dlq",), None, "connect", OriginalHeaders(*PRESETS["connect"]))


def test_spring_headers_are_binary_connect_headers_text() -> None:
    assert decode_number((3).to_bytes(4, "big")) == 3
    assert decode_number((1234567).to_bytes(8, "big")) == 1234567
    assert decode_number(b"42") == 42
    assert decode_number(b"x") is None
    assert decode_number(None) is None


def test_each_dead_letter_record_names_its_original_and_carries_its_error() -> None:
    spring = [
        ("kafka_dlt-original-topic", b"orders"),
        ("kafka_dlt-original-partition", (1).to_bytes(4, "big")),
        ("kafka_dlt-original-offset", (17).to_bytes(8, "big")),
        ("kafka_dlt-exception-message", b"Listener failed; bad amount"),
        ("message_id", b"m17"),
    ]
    records = [
        ("orders.DLT", 0, 5, b"k", b"{}", spring),
        ("orders.DLT", 0, 6, None, b"{}", [("message_id", b"m18")]),  # no coordinates
        ("orders.DLT", 0, 7, None, None, []),  # nothing at all
    ]
    rows = dead_letter_rows(records, SPRING, MessageIdSpec("header", "message_id")).to_pylist()
    assert rows[0] == {
        "message_id": "m17", "dl_topic": "orders.DLT", "dl_partition": 0, "dl_offset": 5,
        "orig_topic": "orders", "orig_partition": 1, "orig_offset": 17,
        "error": "Listener failed; bad amount",
    }  # fmt: skip
    assert (rows[1]["message_id"], rows[1]["orig_offset"]) == ("m18", None)
    assert rows[2]["message_id"] is None and rows[2]["dl_offset"] == 7


def test_connect_and_message_id_only() -> None:
    headers = [
        ("__connect.errors.topic", b"orders"),
        ("__connect.errors.partition", b"2"),
        ("__connect.errors.offset", b"99"),
        ("__connect.errors.exception.message", b"Converting byte[] to Kafka Connect data failed"),
    ]
    value = b'{"id": "m99"}'
    rows = dead_letter_rows(
        [("dlq", 0, 0, None, value, headers)], CONNECT, MessageIdSpec("json_field", "id")
    ).to_pylist()
    assert (rows[0]["orig_partition"], rows[0]["orig_offset"], rows[0]["message_id"]) == (
        2, 99, "m99",
    )  # fmt: skip
    by_id = DivertedSpec(("dlt",), None, "message_id", None)
    rows = dead_letter_rows(
        [("dlt", 0, 3, b"m5", b"{}", headers)], by_id, MessageIdSpec("key")
    ).to_pylist()
    assert rows[0]["message_id"] == "m5" and rows[0]["orig_topic"] is None
    assert dead_letter_rows([], by_id, MessageIdSpec("key")).num_rows == 0
