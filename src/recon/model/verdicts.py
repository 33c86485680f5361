"""The verdict vocabulary: every message in a window, and every new sink row, gets one of these.

The table in DESIGN.md is the source; the groupings below say how the reconciler and the contract
treat each verdict. The tuples hold plain strings (not enum members) so that they pass unchanged
to Spark, YAML and SQL.
"""

from __future__ import annotations

from enum import StrEnum


class Verdict(StrEnum):
    """One verdict per message (or per invalid record / sink row); the value is what is stored."""

    DELIVERED = "delivered"
    #: Delivered once, but later than the pipeline's ``latency.max_seconds`` (sink row time minus
    #: the record's Kafka timestamp); only when the pipeline declares both.
    LATE = "late"
    #: Delivered once, but its sink row's content differs from the record's (``payload``
    #: declared): the detail names the differing fields, never their values.
    MISMATCHED = "mismatched"
    #: An upsert sink's row for a key holds an older record than the key's newest committed one
    #: (a stale overwrite; ``order`` declared); judged on that newest record.
    OUT_OF_ORDER = "out_of_order"
    LOST = "lost"
    #: Committed, not in the sink, found in one of the pipeline's dead-letter or retry topics
    #: (``diverted:`` declared): accounted for, not lost; the detail names where and why.
    DIVERTED = "diverted"
    #: Committed, outside the records the pipeline's sink is expected to hold (``expect:``
    #: declared): counted and listed, never judged; a sink row for one is named in its detail.
    EXCLUDED = "excluded"
    #: The pipeline's source (``source:``, an outbox table) holds the message, settled, yet no
    #: committed record of the topic ever carried it: lost before the topic (an ``acks=0``
    #: producer's dropped send, a relay that skipped a row).
    UNPUBLISHED = "unpublished"
    DUPLICATED = "duplicated"
    TOPIC_DUPLICATE = "topic_duplicate"
    PHANTOM = "phantom"
    ABORTED_READ = "aborted_read"
    PENDING = "pending"
    UNVERIFIABLE = "unverifiable"
    INVALID = "invalid"


ALL_VERDICTS: tuple[str, ...] = tuple(v.value for v in Verdict)

# The sink-side judgement of a committed message; ratios in the contract are relative to these.
JUDGED: tuple[str, ...] = (
    Verdict.DELIVERED.value,
    Verdict.LATE.value,
    Verdict.MISMATCHED.value,
    Verdict.OUT_OF_ORDER.value,
    Verdict.LOST.value,
    Verdict.DUPLICATED.value,
    # a consumer's own account of a record it could not write: judged, so a sink row arriving
    # later (reprocessed from the dead-letter topic) makes it delivered
    Verdict.DIVERTED.value,
)

# What a contract ratio is relative to: the judged messages and the unpublished ones (a loss at
# the first hop; never in JUDGED, which the rules read as "a committed record was judged").
RATIO_BASE: tuple[str, ...] = (*JUDGED, Verdict.UNPUBLISHED.value)

# Sink rows with no committed record behind them.
UNMATCHED: tuple[str, ...] = (
    Verdict.PHANTOM.value,
    Verdict.ABORTED_READ.value,
    Verdict.UNVERIFIABLE.value,
)

# topic_duplicate is a producer-side finding recorded beside a judged verdict (a boolean column),
# never a row's verdict; it still appears in counts so that the contract can judge it.
ROW_VERDICTS: tuple[str, ...] = tuple(v for v in ALL_VERDICTS if v != Verdict.TOPIC_DUPLICATE)

# Verdicts the ledger keeps, so that later sink rows are counted against earlier messages.
LEDGER_VERDICTS: tuple[str, ...] = (
    *JUDGED, Verdict.PENDING.value, *UNMATCHED, Verdict.UNPUBLISHED.value,
    Verdict.EXCLUDED.value,
)  # fmt: skip

SEMANTICS: tuple[str, ...] = ("at_most_once", "at_least_once", "exactly_once")
