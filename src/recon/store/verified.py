"""The verified extent of a run: how far a pipeline's sink is now proven complete.

After a run, per partition of the topic, every record below ``verified_to`` has a final verdict
(``delivered``, or a discrepancy the contract allowed): the window's end, or the first offset of a
message the run left ``pending`` when one sits below it. Pending records are the only ones a run
reads without judging, so nothing below that offset waits for a later run.

The event-time watermark ``T``: every record whose Kafka timestamp is at or before ``T`` is
accounted for. The results store keeps offsets, not record timestamps, so ``T`` is derived from
what the offset snapshot knew about time, per partition:

- nothing unaccounted when the snapshot was taken (``verified_to`` reaches the high watermark):
  every record the partition held then is accounted for, and a record appended later is stamped
  later: ``T_p`` is the snapshot time less one millisecond;
- else, when ``verified_to`` is at or past the first offset stamped at or after the settle horizon
  (``snapshot time - settle_seconds``, Kafka's lookup by timestamp): ``T_p`` is that horizon less
  one millisecond;
- else the first unaccounted record is older than the horizon and its time is unknown here:
  ``T_p`` is unknown.

``T`` is the earliest ``T_p``, unknown when one is. Both rules read Kafka timestamps as growing
with the offset (``LogAppendTime``, or producers whose clocks move forward): a record written
later with an older ``CreateTime`` is not covered by ``T``.

Pure (:func:`extent`) beside the one query that feeds it (:func:`read_extent`); no Airflow here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from recon.store.runs import RunNotFound

_MS = timedelta(milliseconds=1)


@dataclass(frozen=True)
class PartitionFacts:
    """What one run knows about one partition (``recon.offset_snapshots`` and its pending rows)."""

    topic: str
    partition: int
    window_to: int
    high_watermark: int
    settled_offset: int | None
    #: the lowest offset of a message the run left pending in this partition; None: none
    first_pending: int | None = None


@dataclass(frozen=True)
class PartitionExtent:
    topic: str
    partition: int
    #: every record below this offset has a final verdict
    verified_to: int
    #: every record of this partition stamped at or before this time is accounted for
    watermark: datetime | None


@dataclass(frozen=True)
class VerifiedExtent:
    pipeline: str
    run_id: str
    partitions: tuple[PartitionExtent, ...]
    #: every record stamped at or before this time is accounted for (None: not known)
    watermark: datetime | None

    def as_extra(self) -> dict[str, Any]:
        """JSON-ready, as an Asset event's ``extra`` carries it (times in ISO 8601, UTC)."""
        return {
            "pipeline": self.pipeline,
            "run_id": self.run_id,
            "watermark": _iso(self.watermark),
            "partitions": [
                {
                    "topic": p.topic,
                    "partition": p.partition,
                    "verified_to": p.verified_to,
                    "watermark": _iso(p.watermark),
                }
                for p in self.partitions
            ],
        }


def _iso(t: datetime | None) -> str | None:
    return t.astimezone(UTC).isoformat(timespec="milliseconds") if t else None


def partition_extent(
    facts: PartitionFacts, snapshot_at: datetime, settle_seconds: float
) -> PartitionExtent:
    """One partition's extent (the rules of the module's docstring).

    :param facts: the run's facts about the partition.
    :param snapshot_at: when the run's offset snapshot was taken.
    :param settle_seconds: the pipeline's settle time when the snapshot was taken.
    """
    verified_to = facts.window_to
    if facts.first_pending is not None:
        verified_to = min(verified_to, facts.first_pending)
    watermark: datetime | None = None
    if verified_to >= facts.high_watermark:
        watermark = snapshot_at - _MS
    elif facts.settled_offset is not None and verified_to >= facts.settled_offset:
        watermark = snapshot_at - timedelta(seconds=settle_seconds) - _MS
    return PartitionExtent(facts.topic, facts.partition, verified_to, watermark)


def extent(
    pipeline: str,
    run_id: str,
    partitions: Sequence[PartitionFacts],
    snapshot_at: datetime,
    settle_seconds: float,
) -> VerifiedExtent:
    """The run's verified extent: each partition's, and the earliest watermark of them.

    :param pipeline: the pipeline.
    :param run_id: the run.
    :param partitions: the run's facts per partition.
    :param snapshot_at: when the run's offset snapshot was taken.
    :param settle_seconds: the pipeline's settle time.
    """
    parts = tuple(
        partition_extent(f, snapshot_at, settle_seconds)
        for f in sorted(partitions, key=lambda f: (f.topic, f.partition))
    )
    marks = [p.watermark for p in parts]
    known = [m for m in marks if m is not None]
    watermark = min(known) if parts and len(known) == len(marks) else None
    return VerifiedExtent(pipeline, run_id, parts, watermark)


_FACTS_SQL = """
SELECT s.topic, s.partition, s.window_to, s.high_watermark, s.settled_offset,
       (SELECT min(d.first_offset) FROM recon.discrepancies d
         WHERE d.pipeline = s.pipeline AND d.run_id = s.run_id AND d.verdict = 'pending'
           AND d.topic = s.topic AND d.partition = s.partition) AS first_pending,
       s.snapshot_at
  FROM recon.offset_snapshots s
 WHERE s.pipeline = %s AND s.run_id = %s
"""


def read_extent(conn: Any, pipeline: str, run_id: str, settle_seconds: float) -> VerifiedExtent:
    """The verified extent of a stored run, from its offset snapshot and its pending rows.

    :param conn: a psycopg2 connection to the results database.
    :param pipeline: the pipeline.
    :param run_id: the run.
    :param settle_seconds: the pipeline's settle time.
    :raises RunNotFound: the run has no offset snapshot.
    """
    with conn.cursor() as cur:
        cur.execute(_FACTS_SQL, (pipeline, run_id))
        rows = cur.fetchall()
    if not rows:
        raise RunNotFound(f"pipeline '{pipeline}': run '{run_id}' has no offset snapshot")
    facts = [PartitionFacts(*row[:6]) for row in rows]
    return extent(pipeline, run_id, facts, rows[0][6], settle_seconds)
