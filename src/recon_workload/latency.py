"""Ground truth for delivery latency: which messages a slow consumer holds back, and which of
them are ``late`` for the bound the scenario is designed around.

Latency is what the product measures: the sink row's time (``written_at``, filled by
``clock_timestamp()`` as the row is inserted) minus the record's Kafka timestamp (CreateTime, set
by the producer). Both clocks are this host's (Kafka and PostgreSQL listen on loopback), so the
difference is real delivery time, not skew.

The truth is measured from what was read back, like the rest of the ledger; the plan (which
messages were held back) only serves to check that the run kept its margins: every on-time
message at most :data:`ON_TIME_MAX_SECONDS`, every late one at least :data:`LATE_MIN_SECONDS`, so
no jitter, rounding or choice of precision can move a message across :data:`LATE_BOUND_SECONDS`.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from recon_workload.errors import WorkloadError
from recon_workload.kafka_io import Position
from recon_workload.ledger import LedgerRow
from recon_workload.sink import TIME_COLUMN

#: The ``latency.max_seconds`` a pipeline over the slow consumer's sink declares.
LATE_BOUND_SECONDS = 2.0
#: On-time messages are written within this (typically tens of milliseconds).
ON_TIME_MAX_SECONDS = 1.0
#: Held-back messages are written no sooner than this after their Kafka timestamp.
LATE_MIN_SECONDS = 3.5
#: How long the slow consumer holds a message back, counted from its Kafka timestamp; above
#: LATE_MIN_SECONDS by construction (a parked record is never written before it is due).
HOLD_BACK_SECONDS = 4.5


@dataclass(frozen=True)
class LatencyDesign:
    """The bound a scenario is designed around and the gap kept clear on both sides of it.

    :param bound: ``latency.max_seconds`` of the pipeline the truth is for.
    :param on_time_max: no on-time message may take longer than this.
    :param late_min: no late message may take less than this.
    """

    bound: float = LATE_BOUND_SECONDS
    on_time_max: float = ON_TIME_MAX_SECONDS
    late_min: float = LATE_MIN_SECONDS

    def __post_init__(self) -> None:
        if not 0 < self.on_time_max < self.bound < self.late_min:
            raise ValueError(
                f"need 0 < on_time_max < bound < late_min, got {self.on_time_max}, "
                f"{self.bound}, {self.late_min}"
            )

    def is_late(self, seconds: float) -> bool:
        """The product's rule: late when the latency exceeds the bound."""
        return seconds > self.bound

    def in_gap(self, seconds: float) -> bool:
        """Too close to the bound for the truth to be safe from timing jitter."""
        return self.on_time_max < seconds < self.late_min


@dataclass(frozen=True)
class LatencyPlan:
    """What a scenario promises about latency, handed to the runner with its outcome.

    :param held_back: messageIds the consumer delayed by ``hold_seconds``.
    :param time_column: the sink column latency is measured to (``written_at``).
    """

    design: LatencyDesign
    held_back: frozenset[str]
    hold_seconds: float = HOLD_BACK_SECONDS
    time_column: str = TIME_COLUMN


def pick_held_back(message_ids: Sequence[str], fraction: float, seed: int) -> list[str]:
    """The messages a slow consumer holds back: a seeded sample of ``fraction`` of them, at
    least one and never all (a run needs both kinds), in the given order.

    :raises WorkloadError: for a fraction outside (0, 1) or fewer than two messages.
    """
    if not 0 < fraction < 1:
        raise WorkloadError(f"late_fraction={fraction}: use a value between 0 and 1")
    if len(message_ids) < 2:
        raise WorkloadError("a slow consumer needs at least two messages (late and on time)")
    count = min(len(message_ids) - 1, max(1, round(len(message_ids) * fraction)))
    # Its own stream, so the sample does not shift when other seeded choices are added.
    chosen = set(random.Random(seed * 1000 + 11).sample(range(len(message_ids)), count))
    return [mid for i, mid in enumerate(message_ids) if i in chosen]


def latencies(
    entries: Sequence[LedgerRow],
    timestamps_ms: Mapping[Position, int],
    written_at: Mapping[str, datetime],
) -> dict[str, float]:
    """Seconds from Kafka timestamp to sink row time, per delivered message (the only ones the
    product judges ``late``).

    A message whose record appears twice in the topic (a producer retry) is timed from its
    first record: the copy carries the retry's own, later time.

    :param timestamps_ms: the record timestamp (ms since the epoch) per position.
    :param written_at: the sink row time per messageId (a delivered message has one row).
    """
    out: dict[str, float] = {}
    for e in entries:
        if e.expected_verdict != "delivered" or e.message_id is None:
            continue
        stamps = [timestamps_ms[p] for p in e.positions if p in timestamps_ms]
        row_time = written_at.get(e.message_id)
        if not stamps or row_time is None:
            raise WorkloadError(f"{e.message_id}: delivered, yet no record or sink time to time")
        out[e.message_id] = row_time.timestamp() - min(stamps) / 1000.0
    return out


@dataclass
class LatencyTruth:
    """Measured latencies judged against a design.

    :param late: messageIds over the bound.
    :param in_gap: messageIds too close to the bound (the run broke its margins).
    """

    seconds: dict[str, float]
    late: set[str] = field(default_factory=set)
    in_gap: set[str] = field(default_factory=set)

    def problems(self, plan: LatencyPlan) -> list[str]:
        """How the run differs from what the scenario promised; empty when it kept its word."""
        out = []
        if self.in_gap:
            shown = sorted((round(self.seconds[m], 3), m) for m in self.in_gap)[:5]
            out.append(
                f"{len(self.in_gap)} latencies between {plan.design.on_time_max} s and "
                f"{plan.design.late_min} s, too near the {plan.design.bound} s bound: {shown}"
            )
        unexpected = sorted(self.late - plan.held_back)[:5]
        if unexpected:
            out.append(f"late though not held back: {unexpected}")
        missing = sorted((plan.held_back & set(self.seconds)) - self.late)[:5]
        if missing:
            out.append(f"held back, yet on time: {missing}")
        return out


def judge(seconds: Mapping[str, float], design: LatencyDesign) -> LatencyTruth:
    """Which measured latencies are late for ``design.bound``, and which sit in its gap."""
    return LatencyTruth(
        dict(seconds),
        {m for m, s in seconds.items() if design.is_late(s)},
        {m for m, s in seconds.items() if design.in_gap(s)},
    )


def apply(entries: Sequence[LedgerRow], truth: LatencyTruth) -> None:
    """Write the truth into the ledger rows: each delivered message gets its latency, and a
    late one the verdict ``late`` (what a pipeline declaring the bound must say instead of
    ``delivered``)."""
    for e in entries:
        if e.message_id is None or e.message_id not in truth.seconds:
            continue
        e.latency_seconds = truth.seconds[e.message_id]
        if e.message_id in truth.late:
            e.expected_verdict = "late"


def check_plan(truth: LatencyTruth, plan: LatencyPlan, delivered: Collection[str]) -> None:
    """Raise unless the run kept the scenario's promise (margins kept, late iff held back).

    :param delivered: messageIds delivered once (a held-back message that was not is reported).
    :raises WorkloadError: naming what went wrong, so no truth near the bound is ever stored.
    """
    problems = truth.problems(plan)
    undelivered = sorted(plan.held_back - set(delivered))[:5]
    if undelivered:
        problems.append(f"held back, not delivered once: {undelivered}")
    if problems:
        raise WorkloadError("the slow consumer missed its design: " + "; ".join(problems))
