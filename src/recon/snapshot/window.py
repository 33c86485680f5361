"""The window of one run, per partition, from an offset snapshot and the previous watermarks.

Pure: no Kafka, no database. ``recon.snapshot.offsets`` gathers the offsets; this module decides.

Per partition:

- ``from`` is where the previous successful run stopped (its watermark); on the first run it is
  the configured start (``earliest``: the log-start offset, or a number per partition).
- ``to`` is the consumer group's committed offset, clamped to the last stable offset (a
  read_committed reader cannot pass an open transaction) and to the first record younger than the
  settle time. Records at or past ``to`` are *pending*: read, never judged.
- When ``from`` is below the log-start offset, retention or compaction removed ``[from,
  log_start)``: the partition is *unverifiable* for the part of that range inside the window,
  ``[from, min(log_start, to))``, and the read starts at log-start. Removed offsets at or past
  ``to`` (pending ones: the consumer had not claimed them) are reported by the run whose window
  reaches them, so each removed offset is reported once, and a consumer stuck below the
  log-start offset does not fail every run with the same gap.
- On a compacted topic (``cleanup.policy`` with ``compact``) the log cleaner also removes records
  *inside* the log: offsets between the log start and the end without a record. The window keeps
  the policy; the run counts the records it read per partition and hands the rules the
  partitions with such gaps (``recon.engines.pending.compaction_gaps``).
- A committed offset lower than the one seen by the previous run is a *rewind*; ``to`` never moves
  below ``from`` (messages already judged stay judged; the duplicates the rewind causes are caught
  through the ledger when their sink rows arrive).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class PartitionOffsets:
    """What Kafka said about one partition at snapshot time."""

    topic: str
    partition: int
    log_start_offset: int
    last_stable_offset: int
    high_watermark: int
    committed_offset: int | None  # None: the group has committed nothing here
    settled_offset: int | None  # first offset younger than the settle time; None: none is
    cleanup_policy: str | None = None  # the topic's cleanup.policy; None: not readable
    #: the topic's message.timestamp.type (CreateTime, LogAppendTime); None: not readable
    timestamp_type: str | None = None


def is_compacted(cleanup_policy: str | None) -> bool:
    """Whether a topic's ``cleanup.policy`` lets the log cleaner remove records inside the log
    (``compact``, ``compact,delete``), not only from its start."""
    return "compact" in (cleanup_policy or "").lower()


@dataclass(frozen=True)
class Watermark:
    """Where the previous successful run stopped in one partition."""

    next_offset: int
    committed_offset: int | None


@dataclass(frozen=True)
class PartitionWindow:
    """One partition's window for one run."""

    topic: str
    partition: int
    log_start_offset: int
    last_stable_offset: int
    high_watermark: int
    committed_offset: int | None
    settled_offset: int | None
    window_from: int
    window_to: int
    previous_committed: int | None
    rewound: bool
    new_partition: bool
    cleanup_policy: str | None = None

    @property
    def compacted(self) -> bool:
        """The topic is compacted: offsets inside the window may have lost their records."""
        return is_compacted(self.cleanup_policy)

    @property
    def read_from(self) -> int:
        """Where the read starts: below log-start nothing is left to read."""
        return max(self.window_from, self.log_start_offset)

    @property
    def removed_to(self) -> int:
        """End of the window's removed part ``[from, removed_to)``; ``from`` when none is."""
        return max(self.window_from, min(self.log_start_offset, self.window_to))

    @property
    def unverifiable(self) -> bool:
        return self.removed_to > self.window_from

    @property
    def pending_to(self) -> int:
        """Pending records are read up to the last stable offset."""
        return max(self.last_stable_offset, self.window_to)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan_windows(
    offsets: list[PartitionOffsets],
    watermarks: Mapping[tuple[str, int], Watermark],
    start_offsets: str | Mapping[int, int] = "earliest",
) -> list[PartitionWindow]:
    """Decide each partition's window.

    :param offsets: the snapshot, one entry per partition of the topic.
    :param watermarks: the previous run's stopping points by (topic, partition); empty at first.
    :param start_offsets: first run only: ``earliest`` or an explicit offset per partition.
    """
    first_run = not watermarks
    windows = []
    for o in sorted(offsets, key=lambda o: (o.topic, o.partition)):
        mark = watermarks.get((o.topic, o.partition))
        if mark is not None:
            window_from = mark.next_offset
        elif isinstance(start_offsets, Mapping) and o.partition in start_offsets:
            window_from = int(start_offsets[o.partition])
        else:
            window_from = o.log_start_offset
        claimed = o.committed_offset if o.committed_offset is not None else window_from
        window_to = min(claimed, o.last_stable_offset)
        if o.settled_offset is not None:
            window_to = min(window_to, o.settled_offset)
        window_to = max(window_to, window_from)
        previous = mark.committed_offset if mark is not None else None
        rewound = (
            previous is not None
            and o.committed_offset is not None
            and o.committed_offset < previous
        )
        windows.append(
            PartitionWindow(
                topic=o.topic,
                partition=o.partition,
                log_start_offset=o.log_start_offset,
                last_stable_offset=o.last_stable_offset,
                high_watermark=o.high_watermark,
                committed_offset=o.committed_offset,
                settled_offset=o.settled_offset,
                window_from=window_from,
                window_to=window_to,
                previous_committed=previous,
                rewound=rewound,
                new_partition=mark is None and not first_run,
                cleanup_policy=o.cleanup_policy,
            )
        )
    return windows


def rewinds(windows: list[PartitionWindow]) -> list[dict[str, Any]]:
    """The partitions whose committed offset moved backwards since the previous run."""
    return [
        {"partition": w.partition, "from": w.previous_committed, "to": w.committed_offset}
        for w in windows
        if w.rewound
    ]
