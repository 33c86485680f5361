"""The repair hint of each violated verdict, and the SQL that lists every message of one."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from recon.alert.funnel import source_row_without_id, unpublished_source
from recon.alert.text import shown, sql_literal, value
from recon.config.model import SHA256_FIELD
from recon.model.details import differing_fields, out_of_order_positions
from recon.model.verdicts import Verdict


def sample_keys(sample: Mapping[str, Any]) -> list[str]:
    """The sample's sink keys as an alert shows them (data: :func:`recon.alert.text.value`)."""
    return [value(k) for k in sample.get("sink_keys") or []]


def field_names(fields: Iterable[str]) -> str:
    """Differing fields (from a detail, :func:`recon.model.details.differing_fields`) as an alert
    shows them: each escaped like a messageId (:func:`recon.alert.text.value`): a name is the
    pipeline's own, and may hold anything; the SHA-256 mode's own name bare (not data)."""
    return ", ".join(name if name == SHA256_FIELD else value(name) for name in fields)


def _differing(samples: Sequence[Mapping[str, Any]]) -> list[str]:
    """The fields the samples' details name as differing, each once, in order."""
    return list(dict.fromkeys(f for s in samples for f in differing_fields(s.get("detail")) or ()))


def _ranges(offsets: Iterable[int]) -> str:
    ordered = sorted(set(offsets))
    spans: list[str] = []
    start = prev = None
    for o in [*ordered, None]:
        if o is not None and prev is not None and o == prev + 1:
            prev = o
            continue
        if start is not None:
            spans.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = o
    return ", ".join(spans)


def _by_partition(samples: Sequence[Mapping[str, Any]]) -> str:
    grouped: dict[tuple[str, int], list[int]] = {}
    for s in samples:
        if s.get("topic") is None or s.get("partition") is None:
            continue
        grouped.setdefault((shown(s["topic"]), int(s["partition"])), []).extend(
            int(o) for o in s.get("offsets") or []
        )
    parts = []
    for (topic, partition), offsets in sorted(grouped.items()):
        word = "offset" if len(set(offsets)) == 1 else "offsets"
        parts.append(
            f"{topic}/{partition} {word} {_ranges(offsets)}" if offsets else f"{topic}/{partition}"
        )
    return "; ".join(parts)


def full_list_sql(pipeline: str, run_id: str, verdict: str) -> str:
    """The query that lists every message of ``verdict`` in the run (one line, literals quoted)."""
    where = (
        "topic_duplicate"
        if verdict == Verdict.TOPIC_DUPLICATE
        else f"verdict = {sql_literal(verdict)}"
    )
    return (
        "SELECT message_id, topic, partition, offsets, sink_keys FROM recon.discrepancies "
        f"WHERE pipeline = {sql_literal(pipeline)} AND run_id = {sql_literal(run_id)} "
        f"AND {where}"
    )


def _duplicate_deletes(samples: Sequence[Mapping[str, Any]]) -> str:
    items = []
    for s in samples:
        keys = sample_keys(s)
        message_id = value(s.get("message_id"))
        total = int(s.get("sink_count") or len(keys))
        if not keys:
            continue
        if differing_fields(s.get("detail")):
            # Its new copies differ from the record: the first is not necessarily a right one.
            items.append(
                f"{message_id}: keep one row that matches its record, delete the others "
                f"(new: {', '.join(keys)})"
            )
        elif total > len(keys):
            # Rows from earlier runs (or keys left out of the sample) keep the message delivered.
            items.append(f"{message_id}: delete {', '.join(keys)} ({total} rows in all)")
        else:
            items.append(f"{message_id}: delete {', '.join(keys[1:])} (keep {keys[0]})")
    return "; ".join(items)


def _mismatched_hint(positions: str, fields: Sequence[str]) -> str:
    where = positions or "see the full list"
    if list(fields) == [SHA256_FIELD]:
        check = (
            "check that the consumer writes the SHA-256 of the record's raw value bytes (not of "
            "a decoded or re-serialised value), and whether another writer updates the rows"
        )
    else:
        named = f" ({field_names(fields)})" if fields else ""
        check = (
            f"check the consumer's transformation and serialisation of the named fields{named}, "
            "another writer updating the rows after the consumer, and sink column types that "
            "round (numeric scale, timestamp precision)"
        )
    return (
        f"delivered, but the sink rows' content differs from their records', at {where}: "
        f"{check}. Then rewrite the rows from their records."
    )


def _reapply(samples: Sequence[Mapping[str, Any]]) -> str:
    """Per sample, the newest record of its key to re-apply (topic/partition offset, as the other
    hints name positions) and the position the key's row holds instead; the key is data, escaped
    like a messageId. Empty when no sample's detail names its key."""
    items = []
    for s in samples:
        found = out_of_order_positions(s.get("detail"))
        if found is None:
            continue
        key, held, _newest = found
        where = _by_partition([s]) or "see the full list"
        items.append(f"key {value(key)}: {where} (its row holds position {held})")
    return "; ".join(items)


def _out_of_order_hint(positions: str, samples: Sequence[Mapping[str, Any]]) -> str:
    return (
        "the upsert sink's row of a key holds an older record than the key's newest committed "
        "one (a stale overwrite): check for a consumer replaying or retrying old records "
        "without a version check, two consumers or writers racing on one key, and an upsert "
        "without a `WHERE excluded.position > row.position` guard. Then re-apply the newest "
        f"record of each key: {_reapply(samples) or positions or 'see the full list'}."
    )


def _unpublished_hint(samples: Sequence[Mapping[str, Any]]) -> str:
    # An unpublished message has no topic, partition or offset: its id and the source row that
    # names it are all there is to act on.
    items = []
    for s in samples:
        source = unpublished_source(s.get("detail"))
        item = value(s.get("message_id"))
        items.append(item if source is None else f"{item} (source row {value(source[0])})")
    return (
        "the source holds these messages, settled, but no committed record of the topic carries "
        "them (lost before the topic): publish them again from the source, e.g. re-run the "
        f"outbox relay for {', '.join(items) or 'the ids of the full list'}; then check the "
        "producer's acks (acks=all) and retries, and whether the relay skips a row that fails."
    )


def repair_hint(verdict: str | None, samples: Sequence[Mapping[str, Any]]) -> str:
    """What to do about ``verdict``, naming the samples' positions and sink keys."""
    keys = [k for s in samples for k in sample_keys(s)]
    positions = _by_partition(samples)
    if verdict == Verdict.LOST:
        return (
            f"replay these committed records to the sink: {positions or 'see the full list'}."
            " Typical cause: the consumer committed offsets before writing, then crashed."
        )
    if verdict == Verdict.UNPUBLISHED:
        return _unpublished_hint(samples)
    if verdict == Verdict.DUPLICATED:
        differ = _differing(samples)
        return (
            "delete the extra sink rows, keeping one per message: "
            f"{_duplicate_deletes(samples) or 'see the full list'}."
            " Typical cause: the consumer wrote again after a crash or a rewind, without an upsert."
            + (
                f" Some copies also differ from their record in {field_names(differ)}: keep "
                "the one that matches."
                if differ
                else ""
            )
        )
    if verdict == Verdict.ABORTED_READ:
        return (
            "records of aborted producer transactions reached the sink, at "
            f"{positions or 'see the full list'}; delete their sink rows "
            f"({', '.join(keys) or 'see the full list'}) and make the consumer read with "
            "isolation.level=read_committed."
        )
    if verdict == Verdict.PHANTOM:
        return (
            "no committed record carries these messageIds: investigate sink keys "
            f"{', '.join(keys) or '(see the full list)'}: written by something other than the "
            "consumer, or read from records outside the reconciled topic."
        )
    if verdict == Verdict.LATE:
        return (
            "delivered, but later than the bound (latency.max_seconds) after the record's Kafka "
            f"timestamp, at {positions or 'see the full list'}: the consumer is the slow step, "
            "reading late (check the consumer group's lag on these partitions) or writing late "
            "(its batches, transactions and sink write time); if neither is behind, check the "
            "bound. The sink rows are there: nothing to repair."
        )
    if verdict == Verdict.MISMATCHED:
        return _mismatched_hint(positions, _differing(samples))
    if verdict == Verdict.OUT_OF_ORDER:
        return _out_of_order_hint(positions, samples)
    if verdict == Verdict.TOPIC_DUPLICATE:
        return (
            "the producer wrote the same messageId at several offsets (a retry without "
            f"idempotence): {positions or 'see the full list'}. Check enable.idempotence and "
            "the producer's retries; the sink verdicts count each message once."
        )
    if verdict == Verdict.DIVERTED:
        return (
            "more committed records than max_diverted_ratio allows went to the pipeline's "
            f"dead-letter or retry topics ({positions or 'see the full list'}); each row's "
            "detail names its dead-letter record and error. Fix what they fail on, then replay "
            "them from the dead-letter topic: once written they are delivered."
        )
    if verdict == Verdict.UNVERIFIABLE:
        return (
            "records were removed by retention or compaction before this run read them"
            + (f" ({positions})" if positions else "")
            + ": reconcile more often than the topic's retention, or raise max_unverifiable "
            "to accept the gap."
        )
    if verdict == Verdict.INVALID:
        unnamed = [source_row_without_id(s.get("detail")) for s in samples]
        rows = [value(k) for k in unnamed if k is not None]
        where = "; ".join(
            part
            for part in (
                positions,
                "sink keys " + ", ".join(keys) if keys else "",
                "source rows " + ", ".join(rows) if rows else "",
            )
            if part
        )
        what = "records, sink rows or source rows" if rows else "records or sink rows"
        return (
            f"{what} without a usable messageId ({where or 'see the full list'}): fix the "
            "producer or the consumer so every record carries its id"
            + (", and the source's writer so every row names one" if rows else "")
            + ", or raise max_invalid to accept them."
        )
    return "the results do not have the shape the suite expects (a reconciler bug): see Data Docs."
