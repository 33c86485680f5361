"""Ground truth for payload consistency: which delivered messages' sink rows hold other content
than their record (``mismatched``), and in what.

A pipeline compares content one of two ways (``payload.fields`` or ``payload.sha256_column``), so
the truth is measured both ways, from what was read back (the records' values from the topic, the
sink rows' ``seq``, ``payload`` and ``payload_sha256``), never from what the scenario planned:

- by fields: each compared JSON field of the record value against its sink column, by the
  column's type (numbers as numbers, text as text; a field missing from the record equals a NULL
  column), as the product compares them;
- by hash: the hex SHA-256 of the record's value bytes against the row's ``payload_sha256``.

The ledger keeps one expected verdict per message, so a run whose two ways disagree about a
message (a row differing only in a field that is not compared, say) has no single truth: the
plan check refuses it. The plan (which messages the consumer mangled) only serves to check the
run kept its word, like :mod:`recon_workload.latency`.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from recon_workload.errors import WorkloadError
from recon_workload.kafka_io import ReadRecord
from recon_workload.ledger import LedgerRow
from recon_workload.sink import PAYLOAD_COLUMNS, SHA256_COLUMN, SinkRow

#: What a buggy transformation leaves at the end of a text it cut (a decoder's replacement
#: character for the half of a multi-byte character it kept).
REPLACEMENT = "\ufffd"


@dataclass(frozen=True)
class PayloadPlan:
    """What a scenario promises about payloads, handed to the runner with its outcome.

    :param mangled: messageIds written once, with a mangled ``payload`` (``mismatched``).
    :param mangled_copies: messageIds written twice, the second copy mangled (``duplicated``).
    :param fields: the JSON fields compared, each with its sink column, in declaration order.
    :param sha256_column: the sink column holding the hex SHA-256 of the written value.
    """

    mangled: frozenset[str]
    mangled_copies: frozenset[str] = frozenset()
    fields: Mapping[str, str] = field(default_factory=lambda: dict(PAYLOAD_COLUMNS))
    sha256_column: str = SHA256_COLUMN


@dataclass(frozen=True)
class PayloadDiff:
    """How one message's sink rows differ from its record.

    :param fields: the compared JSON fields that differ in at least one of its rows, in the
        plan's order (what a ``payload.fields`` pipeline's detail names).
    :param field_rows: its rows that differ in at least one compared field.
    :param value_rows: its rows whose hash is not the hash of the record's value.
    """

    fields: tuple[str, ...] = ()
    field_rows: int = 0
    value_rows: int = 0

    @property
    def differs(self) -> bool:
        return bool(self.field_rows or self.value_rows)

    @property
    def ways_agree(self) -> bool:
        """Both ways of comparing find the same rows differing (so one verdict holds for both)."""
        return self.field_rows == self.value_rows

    def as_json(self) -> dict[str, Any]:
        return {
            "fields": list(self.fields),
            "field_rows": self.field_rows,
            "value_rows": self.value_rows,
        }


def pick(message_ids: Sequence[str], fraction: float, seed: int, stream: int) -> list[str]:
    """A seeded sample of ``fraction`` of the messages, in the given order; 0 picks none, any
    other fraction at least one and never all.

    :param stream: tells the samples of one run apart (each draws from its own seeded stream,
        so adding one does not shift the others).
    :raises WorkloadError: for a fraction outside [0, 1), or a sample of fewer than two.
    """
    if not 0 <= fraction < 1:
        raise WorkloadError(f"fraction {fraction}: use a value from 0 up to (not including) 1")
    if fraction == 0:
        return []
    if len(message_ids) < 2:
        raise WorkloadError("a sample of some, not all, messages needs at least two")
    count = min(len(message_ids) - 1, max(1, round(len(message_ids) * fraction)))
    chosen = set(random.Random(seed * 1000 + stream).sample(range(len(message_ids)), count))
    return [mid for i, mid in enumerate(message_ids) if i in chosen]


def pick_mangled(
    message_ids: Sequence[str], mangle_fraction: float, copy_fraction: float, seed: int
) -> tuple[list[str], list[str]]:
    """The messages a mangling consumer corrupts: those it writes once, mangled, and (drawn
    from the others) those it writes twice, the second copy mangled; both in message order.

    :raises WorkloadError: for a ``mangle_fraction`` outside (0, 1) (a run needs both kinds).
    """
    if not 0 < mangle_fraction < 1:
        raise WorkloadError(f"mangle_fraction={mangle_fraction}: use a value between 0 and 1")
    mangled = pick(message_ids, mangle_fraction, seed, 13)
    taken = set(mangled)
    rest = [m for m in message_ids if m not in taken]
    copies = pick(rest, copy_fraction, seed, 17) if len(rest) > 1 else []
    return mangled, copies


def mangle_text(text: str) -> str:
    """What the buggy transformation makes of a text: cut at half its length, ended with the
    replacement character; never the text it was given."""
    out = text[: len(text) // 2] + REPLACEMENT
    return out if out != text else text + REPLACEMENT


def mangle_value(value: bytes | None) -> bytes:
    """The record's value as the buggy transformation hands it on: its ``payload`` mangled,
    every other field as it was, serialised again.

    :raises ValueError: for a value that is not a JSON object with a text ``payload`` (the
        scenario mangles only good messages).
    """
    doc = json.loads(value.decode("utf-8")) if value else None
    if not isinstance(doc, dict) or not isinstance(doc.get("payload"), str):
        raise ValueError("only a JSON object with a text payload can be mangled")
    return json.dumps({**doc, "payload": mangle_text(doc["payload"])}).encode()


def _record_fields(value: bytes | None) -> dict[str, Any]:
    try:
        doc = json.loads(value.decode("utf-8")) if value else None
    except (UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return doc if isinstance(doc, dict) else {}


def same(field_value: Any, column_value: Any) -> bool:
    """A record's JSON field equals its sink column's value, compared by the column's type
    (numbers as numbers, anything else as text); a missing or null field equals only NULL."""
    if field_value is None or column_value is None:
        return field_value is None and column_value is None
    if isinstance(column_value, int | float) and not isinstance(column_value, bool):
        number = isinstance(field_value, int | float) and not isinstance(field_value, bool)
        return number and field_value == column_value
    text = field_value if isinstance(field_value, str) else json.dumps(field_value)
    return text == str(column_value)


def diff(value: bytes | None, rows: Sequence[SinkRow], fields: Mapping[str, str]) -> PayloadDiff:
    """How ``rows`` differ from the record with ``value``, both ways.

    :param fields: JSON field -> the :class:`~recon_workload.sink.SinkRow` attribute (sink
        column) it lands in.
    """
    record = _record_fields(value)
    digest = hashlib.sha256(value).hexdigest() if value is not None else None
    differing: set[str] = set()
    field_rows = value_rows = 0
    for row in rows:
        off = {f for f, column in fields.items() if not same(record.get(f), getattr(row, column))}
        differing |= off
        field_rows += bool(off)
        value_rows += (row.payload_sha256 or "").lower() != (digest or "")
    return PayloadDiff(tuple(f for f in fields if f in differing), field_rows, value_rows)


def measure(
    entries: Sequence[LedgerRow],
    records: Sequence[ReadRecord],
    rows: Sequence[SinkRow],
    fields: Mapping[str, str],
) -> dict[str, PayloadDiff]:
    """Per message the product compares (one delivered or duplicated, with an id), how its sink
    rows differ from its record: its first committed one (a producer retry's copy carries the
    same value)."""
    first: dict[str, ReadRecord] = {}
    for r in sorted(records, key=lambda r: (r.position.partition, r.position.offset)):
        if r.message_id is not None:
            first.setdefault(r.message_id, r)
    by_id: dict[str, list[SinkRow]] = defaultdict(list)
    for row in rows:
        if row.message_id is not None:
            by_id[row.message_id].append(row)
    out: dict[str, PayloadDiff] = {}
    for e in entries:
        mid = e.message_id
        if e.expected_verdict not in ("delivered", "duplicated") or mid is None:
            continue
        if mid not in first:
            raise WorkloadError(f"{mid}: {e.expected_verdict}, yet no record to compare with")
        out[mid] = diff(first[mid].value, by_id[mid], fields)
    return out


def check_plan(
    entries: Sequence[LedgerRow], diffs: Mapping[str, PayloadDiff], plan: PayloadPlan
) -> None:
    """Raise unless the run kept the scenario's promise: every message delivered once, but each
    mangled copy's message twice; each mangled message and each second copy differing from its
    record in exactly the payload, both ways; every other row equal to its record.

    :raises WorkloadError: naming what went wrong, so no truth that depends on the way of
        comparing, or that the scenario did not mean, is ever stored.
    """
    problems: list[str] = []

    def report(what: str, ids: set[str]) -> None:
        if ids:
            problems.append(f"{what}: {sorted(ids)[:5]}")

    verdicts = {e.ledger_key: (e.expected_verdict, e.sink_rows) for e in entries}
    twice = {k for k, v in verdicts.items() if v == ("duplicated", 2)}
    once = {k for k, v in verdicts.items() if v == ("delivered", 1)}
    report("not written twice though copied", set(plan.mangled_copies) - twice)
    report("not delivered once", set(verdicts) - set(plan.mangled_copies) - once)
    report("the two ways of comparing disagree", {m for m, d in diffs.items() if not d.ways_agree})
    wanted = PayloadDiff(("payload",), 1, 1)
    mangled = plan.mangled | plan.mangled_copies
    off = {m for m in mangled if diffs.get(m) != wanted}
    report("mangled, yet not differing in exactly its payload, in one row", off)
    report("never mangled, yet differing", {m for m, d in diffs.items() if d.differs} - mangled)
    if problems:
        raise WorkloadError("the mangling consumer missed its design: " + "; ".join(problems))


def apply(entries: Sequence[LedgerRow], diffs: Mapping[str, PayloadDiff]) -> None:
    """Write the truth into the ledger rows: each compared message gets its difference, and a
    delivered one whose row differs the verdict ``mismatched`` (what a pipeline declaring
    ``payload`` must say instead of ``delivered``; a duplicated one stays ``duplicated``)."""
    for e in entries:
        found = diffs.get(e.message_id) if e.message_id is not None else None
        if found is None:
            continue
        e.payload_diff = found.as_json()
        if e.expected_verdict == "delivered" and found.differs:
            e.expected_verdict = "mismatched"
