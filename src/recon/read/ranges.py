"""Offset ranges: which offsets each part of a run's window holds (:func:`part_ranges`,
:func:`window_ranges`), and how a read is cut into tasks (:func:`split_ranges`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from recon.snapshot.window import PartitionWindow


@dataclass(frozen=True)
class OffsetRange:
    """``[start, end)`` of one partition."""

    topic: str
    partition: int
    start: int
    end: int


def part_ranges(windows: Sequence[PartitionWindow], part: str) -> list[OffsetRange]:
    """The offsets each partition's ``part`` of a run holds: ``committed`` the window
    ``[from, to)`` and ``pending`` ``[to, LSO)``, both read read_committed; ``inflight``
    ``[LSO, high watermark)`` read read_uncommitted: records of open transactions and the
    committed records behind them, which a consumer reading uncommitted may have written
    already. Their sink rows are pending, never phantoms."""
    if part == "committed":
        return [OffsetRange(w.topic, w.partition, w.read_from, w.window_to) for w in windows]
    if part == "inflight":
        return [
            OffsetRange(w.topic, w.partition, max(w.pending_to, w.read_from), w.high_watermark)
            for w in windows
        ]
    return [OffsetRange(w.topic, w.partition, w.window_to, w.pending_to) for w in windows]


def window_ranges(windows: Sequence[PartitionWindow]) -> list[OffsetRange]:
    """The committed and pending parts together, ``[from, LSO)`` per partition: what a run's
    window reads, and what its read_uncommitted pass reads again."""
    return [OffsetRange(w.topic, w.partition, w.read_from, w.pending_to) for w in windows]


def split_ranges(ranges: Sequence[OffsetRange], pieces: int) -> list[OffsetRange]:
    """The non-empty ``ranges``, a range larger than an even share of ``pieces`` cut into
    consecutive ranges of about that share: a window with fewer partitions than cores is still
    read by every core."""
    wanted = [r for r in ranges if r.end > r.start]
    total = sum(r.end - r.start for r in wanted)
    share = max(1, -(-total // max(1, pieces)))
    out = []
    for r in wanted:
        cuts = -(-(r.end - r.start) // share)
        step = -(-(r.end - r.start) // cuts)
        out += [
            OffsetRange(r.topic, r.partition, start, min(start + step, r.end))
            for start in range(r.start, r.end, step)
        ]
    return out
