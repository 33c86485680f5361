"""messageId extraction from raw Kafka rows (``recon.read.message_ids.extract_ids``, what the
readers of both engines run on each chunk); bad records are quarantined with their position."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.raw_records import raw_rows

from recon.config import MessageIdSpec
from recon.read.message_ids import MAX_MESSAGE_ID_LENGTH, extract_ids

pytestmark = pytest.mark.unit


def verdicts(rows: list[tuple[Any, ...]], spec: MessageIdSpec) -> dict[int, tuple[Any, Any]]:
    got = extract_ids(raw_rows(rows, spec.name if spec.kind == "header" else None), spec)
    return {
        o: (m, r)
        for o, m, r in zip(
            got["offset"].to_pylist(), got["message_id"].to_pylist(),
            got["invalid_reason"].to_pylist(), strict=True,
        )
    }  # fmt: skip


def test_header_ids_and_every_kind_of_bad_record() -> None:
    rows = [
        (0, None, b"{}", [("message_id", b"m-0")]),
        (1, None, b"{}", [("other", b"x")]),  # no header
        (2, None, b"{}", [("message_id", b"\xff\xfe")]),  # not UTF-8
        (3, None, None, [("message_id", b"m-3")]),  # tombstone
        (4, None, b"{}", [("message_id", b"  ")]),  # blank
        (5, None, b"{}", [("message_id", b"x" * 600)]),  # oversize id
        (6, None, b"{}", [("trace", b"t"), ("message_id", b"m-6")]),
    ]
    got = verdicts(rows, MessageIdSpec("header", "message_id"))
    assert got == {
        0: ("m-0", None),
        1: (None, "message_id_missing"),
        2: (None, "message_id_not_utf8"),
        3: (None, "tombstone"),
        4: (None, "message_id_empty"),
        5: (None, "message_id_oversize"),
        6: ("m-6", None),
    }


def test_json_field_ids() -> None:
    rows = [
        (0, None, b'{"id": "a", "n": 1}', []),
        (1, None, b'{"n": 2}', []),
        (2, None, b"\xff{not json", []),
        (3, None, b"not json", []),
        (4, None, b'{"id": 42}', []),
    ]
    got = verdicts(rows, MessageIdSpec("json_field", "id"))
    assert got == {
        0: ("a", None),
        1: (None, "message_id_missing"),
        2: (None, "value_not_utf8"),
        3: (None, "message_id_missing"),
        4: ("42", None),
    }


def test_key_ids() -> None:
    rows = [(0, b"k0", b"v", []), (1, None, b"v", [])]
    got = verdicts(rows, MessageIdSpec("key"))
    assert got == {0: ("k0", None), 1: (None, "message_id_missing")}


def test_the_length_limit_is_in_characters_and_inclusive() -> None:
    limit = MAX_MESSAGE_ID_LENGTH
    rows = [
        (0, None, b"{}", [("message_id", b"a" * limit)]),
        (1, None, b"{}", [("message_id", b"a" * (limit + 1))]),
        # Two bytes per character: 1024 bytes, still 512 characters.
        (2, None, b"{}", [("message_id", ("\u00e9" * limit).encode())]),
        (3, None, b"{}", [("message_id", ("\u00e9" * (limit + 1)).encode())]),
    ]
    got = verdicts(rows, MessageIdSpec("header", "message_id"))
    assert got == {
        0: ("a" * limit, None),
        1: (None, "message_id_oversize"),
        2: ("\u00e9" * limit, None),
        3: (None, "message_id_oversize"),
    }


def test_bad_json_field_ids() -> None:
    rows = [
        (0, None, b'{"id": ""}', []),
        (1, None, b'{"id": "  "}', []),
        (2, None, b'{"id": null}', []),
        (3, None, None, []),  # tombstone
        (4, None, b"", []),  # empty value
        (5, None, ('{"id": "%s"}' % ("z" * (MAX_MESSAGE_ID_LENGTH + 1))).encode(), []),
        (6, None, b'{"ID": "a"}', []),  # field names are case-sensitive
        (7, None, b'{"id": "ok", "id2": "x"}', []),
        (8, None, b'{"id": {"a": 1}}', []),  # an object or array is no id
        (9, None, b'{"id": [1, 2]}', []),
        (10, None, b'{"id": "[not an array"}', []),  # a string that only looks like one is
        (11, None, b'{"id": " {x}"}', []),
    ]
    got = verdicts(rows, MessageIdSpec("json_field", "id"))
    assert got == {
        0: (None, "message_id_empty"),
        1: (None, "message_id_empty"),
        2: (None, "message_id_missing"),
        3: (None, "tombstone"),
        4: (None, "message_id_missing"),
        5: (None, "message_id_oversize"),
        6: (None, "message_id_missing"),
        7: ("ok", None),
        8: (None, "message_id_not_scalar"),
        9: (None, "message_id_not_scalar"),
        10: ("[not an array", None),
        11: (" {x}", None),
    }


def test_bad_key_ids() -> None:
    rows = [
        (0, b"\xc3\x28", b"v", []),  # an invalid UTF-8 sequence
        (1, b"", b"v", []),
        (2, b"k2", None, []),  # a tombstone has a key but no value: not a message
        (3, b"k" * (MAX_MESSAGE_ID_LENGTH + 1), b"v", []),
        (4, b"k4", b"", []),  # an empty value is still a record with a key
    ]
    got = verdicts(rows, MessageIdSpec("key"))
    assert got == {
        0: (None, "message_id_not_utf8"),
        1: (None, "message_id_empty"),
        2: (None, "tombstone"),
        3: (None, "message_id_oversize"),
        4: ("k4", None),
    }
