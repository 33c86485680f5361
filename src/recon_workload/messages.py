"""What the workload produces, and how a messageId is read back from a record.

A good message carries its messageId three ways: the ``message_id`` header, the JSON value's
``id`` field and the key, so a pipeline may be declared with any of the product's id sources. A bad
record carries none of them (no header, no key, no parseable ``id``), which makes it ``invalid``
whichever source a pipeline declares.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

HEADER = "message_id"
OVERSIZE_BYTES = 950_000  # > 900 KB, under the broker's default max.message.bytes (~1 MB)
OVERSIZE_THRESHOLD = 900 * 1024
BAD_KINDS = ("missing_id", "non_utf8", "tombstone", "oversize")

# As confluent-kafka hands them over: a list of (name, value) pairs, or a dict, or nothing.
Headers = Sequence[tuple[str, str | bytes | None]] | Mapping[str, str | bytes | None] | None


@dataclass(frozen=True)
class Message:
    """One record to produce.

    :param message_id: ``None`` for a bad record.
    :param kind: ``good`` or one of :data:`BAD_KINDS`.
    """

    seq: int
    message_id: str | None
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, str | bytes | None]]
    kind: str = "good"


def good_message(run_tag: str, seq: int, rng: random.Random) -> Message:
    """A ~100-byte JSON message whose id is in the header, the value and the key.

    :param run_tag: makes ids unique across runs, so no two runs' sinks can share an id.
    :param rng: seeded, so payloads repeat with the seed.
    """
    mid = f"{run_tag}-{seq:06d}"
    payload = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789", k=48))
    value = json.dumps({"id": mid, "seq": seq, "payload": payload}).encode()
    return Message(seq, mid, mid.encode(), value, [(HEADER, mid.encode())])


def bad_message(kind: str, seq: int) -> Message:
    """A record with no usable messageId, of the given kind.

    :param kind: one of :data:`BAD_KINDS`.
    """
    value: bytes | None
    if kind == "missing_id":
        value = json.dumps({"seq": seq, "payload": "no id anywhere"}).encode()
    elif kind == "non_utf8":
        value = b"\xff\xfe\xfa not utf-8 \xc3\x28 " + bytes(range(128, 160))
    elif kind == "tombstone":
        value = None
    elif kind == "oversize":
        value = b'{"seq": %d, "payload": "' % seq + b"x" * OVERSIZE_BYTES + b'"}'
    else:
        raise ValueError(f"unknown bad record kind {kind!r}")
    return Message(seq, None, None, value, [], kind)


def extract_id(headers: Headers, value: bytes | None) -> str | None:
    """The record's messageId: the ``message_id`` header, else the JSON value's ``id``.

    :returns: ``None`` when neither yields a non-empty UTF-8 string.
    """
    pairs = headers.items() if isinstance(headers, Mapping) else headers or ()
    for name, raw in pairs:
        if name == HEADER and raw:
            try:
                return raw.decode("utf-8") if isinstance(raw, bytes) else raw
            except UnicodeDecodeError:
                break  # an unreadable header is no id; fall back to the value
    if not value:
        return None
    try:
        doc = json.loads(value.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    mid = doc.get("id") if isinstance(doc, dict) else None
    return mid if isinstance(mid, str) and mid else None


def invalid_reason(value: bytes | None) -> str:
    """Why a record without an id is bad, judged from the bytes read back (not the plan)."""
    if value is None:
        return "tombstone"
    if len(value) > OVERSIZE_THRESHOLD:
        return "oversize"
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return "non_utf8"
    return "missing_id"
