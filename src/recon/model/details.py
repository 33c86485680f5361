"""The words a verdict row's ``detail`` starts with, shared by both engines.

A discrepancy row says why in words a person can act on; where a word also marks the row for the
results store (a correction of an earlier ``lost``), both engines and the store read it here.
"""

from __future__ import annotations

import re

#: A first sink row for a message an earlier run judged ``lost``: the earlier verdict was wrong
#: (a late-committing sink transaction); followed by the run id and ")".
LATE_DELIVERY = "sink row arrived after the message was judged lost (first seen in run "

PENDING = (
    "its record is at or past the window's end (the committed offset, the last stable offset "
    "of an open transaction, or the settle time): judged when the window reaches it"
)
PENDING_REMOVED = (
    "pending when first seen; its record was removed (retention or compaction) before the "
    "window reached it: "
)
PENDING_NEVER_COMMITTED = (
    "pending when first seen; its record was never committed and is no longer readable: "
)
NOT_FOUND_REMOVED = "no committed record found, and records below the log-start offset are gone"
PHANTOM = "no committed record in the window, the pending records or the ledger"
#: An ``unpublished`` message: the source row that names it, and how many rows do (``printf``).
UNPUBLISHED = "source row %s (of %d naming it) settled; no committed record of the topic carries it"
#: A settled source row without a messageId (an ``invalid`` row): the row's key.
SOURCE_WITHOUT_ID = "source row %s without a message id"
#: A sink row whose id is over the length limit (the limit, in characters).
SINK_ID_OVERSIZE = "sink row message id longer than %d characters"

#: An ``excluded`` message (outside the pipeline's ``expect``), without and with sink rows (their
#: number, ``printf``): a row for one should not be there.
EXCLUDED = "outside the records the sink is expected to hold (expect)"
EXCLUDED_WRITTEN = EXCLUDED + ", yet %d sink row(s) hold it: it should not be there"
#: A dead-letter record that names no record the run has seen (an ``unverifiable`` row at the
#: dead-letter record's position); followed by its original's coordinates and error, if any.
DEAD_LETTER_UNKNOWN = "dead-letter record naming no record this pipeline has seen"
#: A message delivered after an earlier run judged it ``diverted`` (reprocessed from a
#: dead-letter or retry topic); followed by the run id and ")".
DIVERTED_DELIVERY = "written after it was diverted (first seen in run "

#: A ``late`` delivery: its latency and the pipeline's bound, both in milliseconds (``printf``).
LATE = "delivered %d ms after its record's Kafka timestamp; the bound is %d ms"

#: A ``mismatched`` delivery, or a duplicated message whose copies differ: the compared fields
#: that differ (names only: their values may be personal data), comma-separated (``printf``).
MISMATCHED = "payload differs from its record's in: %s"
DUPLICATE_COPIES_DIFFER = "new sink rows that differ from the record: %d, in: %s"

#: An ``out_of_order`` record: its key, the position its sink row holds, the record's (newest).
OUT_OF_ORDER = "the sink row of key %s holds position %d, older than this newest record's %d"
#: A record of an upsert sink without a row of its own: its key and the position its row holds.
SUPERSEDED = "superseded: the sink row of key %s holds the record at position %d"

# LATE read back by the format that wrote it, so that a change of the wording fails the tests
# instead of silently dropping the figures.
_LATE_READ = re.compile(r"(?:\A|; )" + re.escape(LATE).replace("%d", r"(-?\d+)"))


def late_figures(detail: object) -> tuple[int, int] | None:
    """``(latency_ms, bound_ms)`` of a ``late`` row's detail, wherever among its "; "-joined
    parts; ``None`` for any other text."""
    found = _LATE_READ.search(detail) if isinstance(detail, str) else None
    return (int(found[1]), int(found[2])) if found else None


# MISMATCHED and DUPLICATE_COPIES_DIFFER read back by the formats that wrote them, as one of the
# "; "-joined parts of a detail (the same row may also say, e.g., that it corrects a lost).
_DIFFER_READ = re.compile(
    "|".join(
        r"(?:\A|; )" + re.escape(form).replace("%d", r"\d+").replace("%s", r"(.+?)") + r"(?:; |\Z)"
        for form in (MISMATCHED, DUPLICATE_COPIES_DIFFER)
    ),
    re.DOTALL,  # a name is the pipeline's own: it may hold a line break
)


def differing_fields(detail: object) -> tuple[str, ...] | None:
    """The compared fields a ``mismatched`` row's detail names (:data:`MISMATCHED`), or a
    duplicated row's whose new copies differ (:data:`DUPLICATE_COPIES_DIFFER`); ``None`` for any
    other text. Names only: the detail never carries the values."""
    found = _DIFFER_READ.search(detail) if isinstance(detail, str) else None
    if found is None:
        return None
    names = next(group for group in found.groups() if group is not None)
    return tuple(names.split(", "))


# OUT_OF_ORDER read back by the format that wrote it, as one of the "; "-joined parts of a detail.
# The key is the user's data and may hold anything (a "; ", a line break, the format's own words):
# it is matched greedily up to the last "holds position <n>, older than ... <n>" that ends a part,
# so only the figures the reconciler wrote after it are taken as the positions.
_OUT_OF_ORDER_READ = re.compile(
    r"(?:\A|; )"
    + re.escape(OUT_OF_ORDER).replace("%s", r"(.*)").replace("%d", r"(-?\d+)")
    + r"(?:; |\Z)",
    re.DOTALL,
)


def out_of_order_positions(detail: object) -> tuple[str, int, int] | None:
    """``(key, held_position, newest_position)`` of an ``out_of_order`` row's detail
    (:data:`OUT_OF_ORDER`): the key, the position its sink row holds and the newest committed
    record's; ``None`` for any other text. The key is data: whoever shows it escapes it."""
    found = _OUT_OF_ORDER_READ.search(detail) if isinstance(detail, str) else None
    return (found[1], int(found[2]), int(found[3])) if found else None


#: What a declared check could not use in a run, in words, by reason: the keys of
#: ``recon.runs.unchecked``, in the order ``recon.store.RunOutcome.unchecked`` counts them, so a
#: reason is named once (this module imports nothing of recon's: the store may import it).
UNCHECKED = {
    "untimed_records": "records without a Kafka timestamp (no latency)",
    "untimed_sink_rows": "sink rows with a null time column (no latency)",
    "unordered_records": "records without an upsert key or position (no order check)",
    "unordered_sink_rows": "sink rows without an upsert key or position (no order check)",
    "shared_keys": "upsert keys with more than one sink row (the newest position is checked)",
    "untimed_source_rows": "source rows with a null or infinite time column (no run judges them)",
}


def unchecked_phrases(unchecked: dict[str, int]) -> list[str]:
    """``recon.runs.unchecked`` as phrases such as ``"3 sink rows with a null time column (no
    latency)"``, in :data:`UNCHECKED` order; an unknown reason is named as stored."""
    known = [f"{unchecked[r]} {words}" for r, words in UNCHECKED.items() if unchecked.get(r)]
    return known + [f"{n} {r}" for r, n in unchecked.items() if r not in UNCHECKED and n]
