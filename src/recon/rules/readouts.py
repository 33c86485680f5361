"""What the driver reads back from a judged run through the engine seam beside its verdict counts
(``recon.rules.run.count_verdicts``): the latency figures, the order and dead-letter facts, the
source funnel. Each runs the steps that
make its small relation (``recon.rules``) and returns plain rows, never a whole relation.
"""

from __future__ import annotations

from typing import Any, cast

from recon.rules import FUNNEL_STEPS, LATENCY_STEPS, UNORDERED_STEPS
from recon.rules.run import RuleEngine, run_steps

#: One row of ``latency_stats``: partition (None for the whole run), messages, negative, min,
#: p50, p95, p99, max (milliseconds).
LatencyRow = tuple[int | None, int, int, int, int, int, int, int]


def latency_stats(engine: RuleEngine) -> list[LatencyRow]:
    """The judged run's delivery latencies (``07_latency_stats``), the whole run first, then by
    partition; empty when no message has one. Then :func:`untimed` may be asked."""
    run_steps(engine, LATENCY_STEPS)
    rows = [
        cast(LatencyRow, tuple(None if v is None else int(v) for v in row))
        for row in engine.rows("latency_stats")
    ]
    return sorted(rows, key=lambda r: (r[0] is not None, r[0] or 0))


def untimed(engine: RuleEngine) -> tuple[int, int]:
    """After :func:`latency_stats`: the usable records and sink rows without a time."""
    ((records, sink_rows),) = engine.rows("untimed")
    return int(records), int(sink_rows)


def unordered(engine: RuleEngine) -> tuple[int, int, int]:
    """After ``recon.rules.run.judge`` of an ordered run: the usable records and the sink rows
    without an upsert key or position, and the keys with more than one sink row
    (``07_unordered``)."""
    run_steps(engine, UNORDERED_STEPS)
    ((records, sink_rows, shared_keys),) = engine.rows("unordered")
    return int(records), int(sink_rows), int(shared_keys)


def dead_letter_restarts(engine: RuleEngine) -> dict[tuple[str, int], int]:
    """After ``recon.rules.run.judge``: per dead-letter partition holding a record of a message
    still pending, the offset the next run reads it from (``06_dead_letters_carried``); the others
    go on from this run's end (``recon.read.dead_letters.next_positions``)."""
    return {(str(t), int(p)): int(o) for t, p, o in engine.rows("dead_letters_carried")}


#: One run's way from source to sink (``07_funnel``): produced, published, committed,
#: delivered, unsourced, source rows without a messageId, extra rows of ids held twice.
FUNNEL_FIELDS = (
    "produced", "published", "committed", "delivered", "unsourced", "source_invalid",
    "source_duplicates",
)  # fmt: skip


def funnel(engine: RuleEngine, sample: int) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """After ``recon.rules.run.judge`` of a run with a source: its counts from source to sink, by
    :data:`FUNNEL_FIELDS`, and its first ``sample`` unsourced messages (in partition, offset
    order, with where they sit in the topic)."""
    run_steps(engine, FUNNEL_STEPS, {"SAMPLE": str(int(sample))})
    (row,) = engine.rows("funnel")
    counts = {name: int(value or 0) for name, value in zip(FUNNEL_FIELDS, row, strict=True)}
    first = [
        {"message_id": m, "partition": int(p), "offset": int(o)}
        for m, p, o in engine.rows("unsourced_sample")
    ]
    return counts, first
