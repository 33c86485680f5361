"""What a person should do about each discrepancy: one repair hint per verdict."""

from __future__ import annotations

from collections.abc import Sequence

from recon.alert.funnel import source_row_without_id, unpublished_source
from recon.model.details import differing_fields, late_figures, out_of_order_positions
from recon_page.data import Discrepancy

#: The general advice, shown once per verdict above the table.
VERDICT_HINTS: dict[str, str] = {
    "lost": "Replay these offsets: the records are committed in the topic but have no sink row.",
    "unpublished": (
        "The source (its outbox table) holds these messages, settled, but the topic never got "
        "them: publish them again from the source, e.g. re-run the outbox relay for these ids; "
        "then check the producer's acks (acks=all) and retries, and whether the relay skips a "
        "row that fails."
    ),
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
    "mismatched": (
        "Delivered, but the sink row's content differs from its record's in the named fields "
        "(payload.fields; names only, never values): check the consumer's transformation and "
        "serialisation of those fields, another writer updating the rows after the consumer, "
        "or a sink column type that rounds (numeric scale, timestamp precision). With "
        "payload.sha256_column: check that the consumer hashes the record's raw value bytes, not "
        "a decoded or re-serialised value. Then rewrite the rows from their records."
    ),
    "out_of_order": (
        "The upsert sink's row of the key holds an older record than the key's newest committed "
        "one (a stale overwrite; order declared): check for a consumer replaying or retrying old "
        "records without a version check, two consumers or writers racing on one key, or an "
        "upsert without a WHERE excluded.position > row.position guard. Then re-apply the "
        "newest record of each key, at these positions."
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
    # The latency is only in the row's detail (recon.model.details.LATE); the table shows no detail.
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


def _where(d: Discrepancy, offsets: str) -> str:
    return f"{d.topic or '?'}[{'?' if d.partition is None else d.partition}] offset {offsets}"


def _mismatched_hint(d: Discrepancy, offsets: str) -> str:
    # The names are only in the row's detail (recon.model.details.MISMATCHED); the table shows
    # no detail.
    # recon.config imported here, not at the top: the page loads no configuration machinery.
    from recon.config.model import SHA256_FIELD

    fields = differing_fields(d.detail)
    record = f"the record at {_where(d, offsets)}"
    if not fields:
        return f"compare the sink row with {record}, then rewrite it from the record"
    if fields == (SHA256_FIELD,):
        return (
            f"the value's SHA-256 differs from {record}: check that the consumer hashes the "
            "raw value bytes, then rewrite the row from the record"
        )
    return (
        f"differs in {_list(fields)}: check how the consumer transforms and serialises them, "
        f"another writer updating the row, or a column that rounds; then rewrite it from {record}"
    )


def _out_of_order_hint(d: Discrepancy, offsets: str) -> str:
    # The key and both positions are only in the row's detail
    # (recon.model.details.OUT_OF_ORDER); the table shows no detail. A position is an offset or
    # the pipeline's version field: named "position", while where to re-apply from is the
    # record's own Kafka offset.
    record = f"this record at {_where(d, offsets)}"
    found = out_of_order_positions(d.detail)
    if found is None:
        return f"the row of its key holds an older record: re-apply {record}"
    key, held, newest = found
    return (
        f"the row of key {key} holds position {held}, older than this record's {newest}: check "
        "for a replay or retry without a version check, or writers racing on the key; then "
        f"re-apply {record}"
    )


def stale_keys(rows: Sequence[Discrepancy]) -> list[str]:
    """The keys the rows' details name as stale (``out_of_order``), each once, in order."""
    found = (out_of_order_positions(d.detail) for d in rows)
    return list(dict.fromkeys(f[0] for f in found if f is not None))


def differing(rows: Sequence[Discrepancy]) -> list[str]:
    """The fields the rows' details name as differing (``mismatched``), each once, in order."""
    return list(dict.fromkeys(f for d in rows for f in differing_fields(d.detail) or ()))


def _duplicated_hint(d: Discrepancy, offsets: str) -> str:
    keys = d.sink_keys
    fields = differing_fields(d.detail)
    if fields:
        # Which copy is right is not known here: keeping the first could keep a wrong one.
        return (
            f"its copies differ in {_list(fields)}: keep the one that matches the record at "
            f"{_where(d, offsets)}, delete the others"
            + (f" (sink keys {_list(keys)})" if keys else "")
        )
    return (
        f"keep sink key {keys[0]}, delete {_list(keys[1:])}"
        if len(keys) > 1
        else f"delete all but one of the {d.sink_count} sink rows"
    )


def source_keys(rows: Sequence[Discrepancy]) -> list[str]:
    """The source rows the rows' details name (``unpublished``, a source row without an id),
    each once, in order."""
    found = (_source_key(d) for d in rows)
    return list(dict.fromkeys(k for k in found if k is not None))


def _source_key(d: Discrepancy) -> str | None:
    if d.verdict == "unpublished":
        source = unpublished_source(d.detail)
        return None if source is None else source[0]
    return source_row_without_id(d.detail) if d.verdict == "invalid" else None


def _unpublished_hint(d: Discrepancy) -> str:
    # The source row is only in the row's detail (recon.model.details.UNPUBLISHED): the message
    # is in no topic, so the table's topic, partition and offsets are empty.
    source = unpublished_source(d.detail)
    held = ""
    if source is not None and source[1] > 1:
        held = f" (the source holds it {source[1]} times)"
    row = f" from source row {source[0]}{held}" if source is not None else " from the source"
    return (
        f"publish messageId {d.message_id or '?'} again{row}: re-run the outbox relay for it; "
        "check the producer's acks and retries"
    )


def row_hint(d: Discrepancy) -> str:
    """A short, concrete instruction for one row (its topic and partition are in the row)."""
    keys, offsets = d.sink_keys, _list(d.offsets) or "?"
    plural = "s" if len(d.offsets) > 1 else ""
    if d.verdict == "lost":
        hint = f"replay offset{plural} {offsets}"
    elif d.verdict == "unpublished":
        hint = _unpublished_hint(d)
    elif d.verdict == "duplicated":
        hint = _duplicated_hint(d, offsets)
    elif d.verdict == "aborted_read":
        hint = (
            f"delete sink key {_list(keys) or '?'}: aborted transaction at offset{plural} {offsets}"
        )
    elif d.verdict == "phantom":
        hint = f"investigate sink key {_list(keys) or '?'}"
    elif d.verdict == "invalid" and (source := source_row_without_id(d.detail)) is not None:
        hint = f"give source row {source} a messageId"
    elif d.verdict == "invalid":
        where = f"offset{plural} {offsets}" if d.offsets else f"sink key {_list(keys) or '?'}"
        hint = f"fix the messageId at {where}"
    elif d.verdict == "late":
        hint = _late_hint(d, offsets)
    elif d.verdict == "mismatched":
        hint = _mismatched_hint(d, offsets)
    elif d.verdict == "out_of_order":
        hint = _out_of_order_hint(d, offsets)
    elif d.verdict == "unverifiable":
        hint = "removed by retention or compaction: check upstream"
    elif d.verdict == "pending":
        hint = "wait for the next run"
    else:
        hint = VERDICT_HINTS.get(d.verdict, "")
    if d.topic_duplicate:
        hint += f"; producer retry: the messageId is at offsets {offsets}"
    return hint
