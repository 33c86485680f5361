"""Where a run stands in a Kafka sink (``sink.kind: kafka``): the target topic's offsets per
partition, the counterpart of the ingest sequence a table sink keeps
(:mod:`recon.snapshot.sink_position`).

A run reads each target partition from where the previous run stopped (``start``, the log start
on the first run) to its last stable offset now (``end``), ``read_committed``: a record of an
aborted transaction is no delivery, and one of a transaction still open lies past the last
stable offset, so it is read by a later run once committed. The records of open transactions
(``[end, high watermark)``, read ``read_uncommitted``) say which messages are on their way:
pending, not lost. When the target's retention removed records before a run read them (its log
start is past ``start``), what they carried can never be proven nor refuted: a message without a
copy in the target is then ``unverifiable``, not ``lost`` (:attr:`TargetRange.removed`).

A position is stored as JSON text (:func:`position_json`), ``{"<partition>": offset}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from recon.read.ranges import OffsetRange


@dataclass(frozen=True)
class TargetPartition:
    """One target partition now: its log start, last stable offset and high watermark."""

    partition: int
    log_start: int
    stable_end: int
    high_watermark: int


@dataclass(frozen=True)
class TargetRange:
    """What a run reads of one target partition.

    :param start: the previous run's end (where reading resumes), 0 on the first run.
    :param end: this run's last stable offset (exclusive).
    :param log_start: the partition's first offset still held.
    :param high_watermark: past the last stable offset: records of open transactions.
    """

    topic: str
    partition: int
    start: int
    end: int
    log_start: int
    high_watermark: int

    @property
    def read_from(self) -> int:
        """The first offset the run can still read."""
        return max(self.start, self.log_start)

    @property
    def removed(self) -> int:
        """How many offsets retention removed before this run read them."""
        return max(0, min(self.log_start, self.end) - self.start)

    def committed(self) -> OffsetRange:
        """The range read ``read_committed``: the deliveries."""
        return OffsetRange(
            self.topic, self.partition, self.read_from, max(self.read_from, self.end)
        )

    def open(self) -> OffsetRange:
        """The range read ``read_uncommitted``: records of transactions still open."""
        start = max(self.end, self.log_start)
        return OffsetRange(self.topic, self.partition, start, max(start, self.high_watermark))


def plan(
    topic: str, previous: Mapping[int, int] | None, now: Sequence[TargetPartition]
) -> list[TargetRange]:
    """Each partition's range for this run.

    :param previous: the previous run's end per partition (None: the first run). A partition it
        does not name (added since) starts at 0.
    :param now: the partitions as they are now.
    """
    out = []
    for part in sorted(now, key=lambda p: p.partition):
        start = (previous or {}).get(part.partition, 0)
        # A partition whose end moved back (the topic was deleted and made again) is read anew.
        if start > part.high_watermark:
            start = 0
        out.append(
            TargetRange(
                topic,
                part.partition,
                start,
                max(start, part.stable_end),
                part.log_start,
                max(part.high_watermark, part.stable_end),
            )
        )
    return out


def position_json(ranges: Sequence[TargetRange]) -> str:
    """This run's position (each partition's end), as stored."""
    return json.dumps({str(r.partition): r.end for r in ranges}, sort_keys=True)


def position_of(stored: str | None) -> dict[int, int] | None:
    """A stored position (None: no run has stored one)."""
    if stored is None:
        return None
    return {int(p): int(o) for p, o in json.loads(stored).items()}


def removed_any(ranges: Sequence[TargetRange]) -> bool:
    """Retention removed target records before this run read them."""
    return any(r.removed > 0 for r in ranges)


def partitions_now(
    config: dict[str, Any], topic: str, timeout: float = 30.0, retry_for: float = 120.0
) -> list[TargetPartition]:
    """The target topic's partitions with their log start, last stable offset and high
    watermark, from its cluster (``config``: the sink connection's client settings), asked as
    the source topic's are (:mod:`recon.snapshot.offsets`: a refused login told apart, a
    restarting broker retried).

    :raises recon.snapshot.offsets.KafkaSnapshotError: the topic does not exist, or the cluster
        did not answer.
    """
    from confluent_kafka import IsolationLevel
    from confluent_kafka.admin import OffsetSpec as _OffsetSpec  # type: ignore[attr-defined]

    from recon.snapshot.offsets import admin_client, list_offsets, topic_partitions

    offset_spec: Any = _OffsetSpec  # untyped in confluent-kafka's stubs
    admin = admin_client(config)
    partitions = topic_partitions(admin, topic, timeout, retry_for)

    def offsets(spec: Any, isolation: Any) -> dict[int, int]:
        return list_offsets(
            admin, topic, partitions, spec, timeout, retry_for, isolation_level=isolation
        )

    starts = offsets(offset_spec.earliest(), IsolationLevel.READ_UNCOMMITTED)
    stable = offsets(offset_spec.latest(), IsolationLevel.READ_COMMITTED)
    high = offsets(offset_spec.latest(), IsolationLevel.READ_UNCOMMITTED)
    return [TargetPartition(p, starts[p], stable[p], high[p]) for p in sorted(starts)]
