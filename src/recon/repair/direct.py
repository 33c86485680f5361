"""A lost message's sink row written from its record (a plan made with ``--write-sink``): the
values the pipeline's ``repair.sink_columns`` take from the record."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from recon.repair.replay import Original
from recon.repair.sink_rows import RepairRefused


def _text(raw: bytes | None, what: str, mid: str) -> str | None:
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise RepairRefused(
            f"message {mid!r}: its record's {what} is not UTF-8 text, so no sink column can get "
            "it as text; map another field in repair.sink_columns"
        ) from None


def _json_field(original: Original, name: str) -> Any:
    mid = original.replay.message_id
    text = _text(original.value, "value", mid)
    try:
        value = json.loads(text) if text is not None else None
    except json.JSONDecodeError:
        raise RepairRefused(f"message {mid!r}: its record's value is not JSON") from None
    found = value.get(name) if isinstance(value, dict) else None
    return json.dumps(found) if isinstance(found, (dict, list)) else found


def row_values(
    original: Original, topic: str, sink_columns: Sequence[tuple[str, str, str | None]]
) -> list[Any]:
    """The values of one sink row, in ``sink_columns`` order.

    :raises RepairRefused: a text column would get bytes that are not UTF-8, or a JSON field
        of a value that is not JSON.
    """
    r, mid = original.replay, original.replay.message_id
    headers = dict(reversed(original.headers))  # the first header of a name wins
    values: list[Any] = []
    for _, source, name in sink_columns:
        if source == "message_id":
            values.append(mid)
        elif source == "topic":
            values.append(topic)
        elif source == "partition":
            values.append(r.partition)
        elif source == "offset":
            values.append(r.offset)
        elif source == "timestamp":
            ms = original.timestamp_ms
            values.append(None if ms is None else datetime.fromtimestamp(ms / 1000, UTC))
        elif source in ("key", "value"):
            values.append(_text(getattr(original, source), source, mid))
        elif source == "json_field":
            values.append(_json_field(original, str(name)))
        else:  # header
            values.append(_text(headers.get(str(name)), f"header {name!r}", mid))
    return values
