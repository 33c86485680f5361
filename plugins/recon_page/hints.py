"""What a person should do about each discrepancy: one repair hint per verdict."""

from __future__ import annotations

from collections.abc import Sequence

from recon.details import late_figures
from recon_page.data import Discrepancy

#: The general advice, shown once per verdict above the table.
VERDICT_HINTS: dict[str, str] = {
    "lost": "Replay these offsets: the records are committed in the topic but have no sink row.",
    "duplicated": "Delete all but one of these sink keys: one message, several sink rows.",
    "aborted_read": (
        "Phantom rows from aborted transactions at these positions: delete them and read with "
        "isolation.level=read_committed."
    ),
    "phantom": "Investigate these sink keys: no committed record in the topic carries their id.",
    "late": (
        "Delivered, but later than the bound (latency.max_seconds) after the record's Kafka "
        "timestamp: the consumer is the slow step, reading late (check the consumer group's "
        "lag on these partitions) or writing late (its batch, transaction and sink write time). "
        "If neither is behind, check the bound itself. The rows are there: nothing to repair."
    ),
    "invalid": "The messageId is missing or unparseable at this position: fix the record or row.",
    "unverifiable": (
        "Retention or compaction removed these records before they were read: check upstream."
    ),
    "pending": (
        "Not judged yet: past the committed offset, past the last stable offset of an open "
        "transaction, or younger than the settle time."
    ),
    "topic_duplicate": "Producer retry: enable the idempotent producer.",
}


def _list(items: Sequence[object], limit: int = 8) -> str:
    shown = ", ".join(str(i) for i in items[:limit])
    return shown + (f", … ({len(items) - limit} more)" if len(items) > limit else "")


def position(d: Discrepancy) -> str:
    """``topic[partition] @ offsets``, or what is known of it."""
    where = d.topic or "?"
    if d.partition is not None:
        where += f"[{d.partition}]"
    if d.offsets:
        where += f" @ {_list(d.offsets)}"
    return where


def _late_hint(d: Discrepancy, offsets: str) -> str:
    # The latency is only in the row's detail (recon.details.LATE); the table shows no detail.
    where = f"{d.topic or '?'}[{'?' if d.partition is None else d.partition}]"
    lag = f"check the consumer lag of {where} around offset {offsets}, or the bound"
    figures = late_figures(d.detail)
    if figures is None:
        return f"delivered late: {lag}"
    latency, bound = figures
    return (
        f"delivered {latency:,} ms after its Kafka timestamp, {latency - bound:,} ms over the "
        f"{bound:,} ms bound: {lag}"
    )


def row_hint(d: Discrepancy) -> str:
    """A short, concrete instruction for one row (its topic and partition are in the row)."""
    keys, offsets = d.sink_keys, _list(d.offsets) or "?"
    plural = "s" if len(d.offsets) > 1 else ""
    if d.verdict == "lost":
        hint = f"replay offset{plural} {offsets}"
    elif d.verdict == "duplicated":
        hint = (
            f"keep sink key {keys[0]}, delete {_list(keys[1:])}"
            if len(keys) > 1
            else f"delete all but one of the {d.sink_count} sink rows"
        )
    elif d.verdict == "aborted_read":
        hint = (
            f"delete sink key {_list(keys) or '?'}: aborted transaction at offset{plural} {offsets}"
        )
    elif d.verdict == "phantom":
        hint = f"investigate sink key {_list(keys) or '?'}"
    elif d.verdict == "invalid":
        where = f"offset{plural} {offsets}" if d.offsets else f"sink key {_list(keys) or '?'}"
        hint = f"fix the messageId at {where}"
    elif d.verdict == "late":
        hint = _late_hint(d, offsets)
    elif d.verdict == "unverifiable":
        hint = "removed by retention or compaction: check upstream"
    elif d.verdict == "pending":
        hint = "wait for the next run"
    else:
        hint = VERDICT_HINTS.get(d.verdict, "")
    if d.topic_duplicate:
        hint += f"; producer retry: the messageId is at offsets {offsets}"
    return hint
