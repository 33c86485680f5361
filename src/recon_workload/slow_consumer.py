"""The slow consumer, run as its own process: ``python -m recon_workload.slow_consumer '<spec>'``.

A consumer that parks some records for a retry later, the way a consumer does when a downstream
call for them failed and it will not block the partition behind them: it writes every record once
(rows, then offsets: at-least-once, with no faults injected), the records named in ``delay_ids``
only once ``delay_seconds`` have passed since their Kafka timestamp, the others at once. A
partition's committed offset never passes its oldest parked record, so a crash would re-read
what was parked rather than lose it.

It starts before anything is produced and says ``READY`` once every partition is being fetched,
so an on-time record is written within milliseconds of its timestamp; it stops after writing
``expect`` records (reaching the end of the partitions proves nothing while the producer runs).
"""

from __future__ import annotations

import heapq
import json
import sys
import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field

from confluent_kafka import OFFSET_STORED, Message, TopicPartition

from recon_workload import sink
from recon_workload.kafka_io import commit_offsets, group_reader, is_eof, where
from recon_workload.messages import extract_id
from recon_workload.protocol import BATCH, DONE, READY, say


@dataclass(frozen=True)
class SlowConsumerSpec:
    """What the slow consumer process does.

    :param expect: records to write before it stops.
    :param delay_ids: messageIds to park.
    :param delay_seconds: a parked record is written this long after its Kafka timestamp.
    :param poll_seconds: longest wait for records in one poll: short, so neither a partial
        batch nor a parked record that fell due waits long.
    """

    topic: str
    partitions: int
    group: str
    table: str
    expect: int
    delay_ids: list[str]
    delay_seconds: float
    batch_size: int = 20
    poll_seconds: float = 0.05

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> SlowConsumerSpec:
        return cls(**json.loads(text))


def due_time(timestamp: tuple[int, int], delay_seconds: float, now: float) -> float:
    """When a parked record may be written: ``delay_seconds`` after its Kafka timestamp (or
    after ``now``, for a record without one).

    :param timestamp: ``Message.timestamp()``: (type, ms since the epoch); type 0 means none.
    """
    kind, stamp_ms = timestamp
    return (stamp_ms / 1000.0 if kind else now) + delay_seconds


def safe_offsets(
    consumed: Mapping[tuple[str, int], int], parked: Iterable[tuple[str, int, int]]
) -> dict[tuple[str, int], int]:
    """The offsets the group may commit: per partition, the next offset after what was read,
    but never past a record still parked (its position is the first not yet written).

    :param consumed: next offset per (topic, partition) after the records read so far.
    :param parked: (topic, partition, offset) of every record parked and not yet written.
    """
    out = dict(consumed)
    for topic, partition, offset in parked:
        key = (topic, partition)
        out[key] = min(out.get(key, offset), offset)
    return out


@dataclass
class ParkedRecords:
    """Records held back, in order of when they fall due."""

    _heap: list[tuple[float, int, Message]] = field(default_factory=list)
    _order: int = 0  # breaks ties: Message objects do not compare

    def park(self, due: float, msg: Message) -> None:
        self._order += 1
        heapq.heappush(self._heap, (due, self._order, msg))

    def pop_due(self, now: float) -> list[Message]:
        """Every parked record due at ``now``, oldest due first."""
        out = []
        while self._heap and self._heap[0][0] <= now:
            out.append(heapq.heappop(self._heap)[2])
        return out

    def positions(self) -> list[tuple[str, int, int]]:
        return [(p.topic, p.partition, p.offset) for p in (where(m) for _, _, m in self._heap)]

    def __len__(self) -> int:
        return len(self._heap)


class SlowConsumer:
    """One slow consumer process's work."""

    def __init__(self, spec: SlowConsumerSpec) -> None:
        self.spec = spec
        self.delay = set(spec.delay_ids)
        self.parked = ParkedRecords()
        self.consumed: dict[tuple[str, int], int] = {}
        self.db = sink.connect()
        self.consumer = group_reader(spec.group)

    def run(self) -> int:
        """Write ``expect`` records; return how many were written."""
        spec = self.spec
        self.consumer.assign(
            [TopicPartition(spec.topic, p, OFFSET_STORED) for p in range(spec.partitions)]
        )
        fetching: set[int] = set()
        ready = False
        written = 0
        while written < spec.expect:
            fresh = []
            for msg in self.consumer.consume(spec.batch_size, timeout=spec.poll_seconds):
                if is_eof(msg):
                    fetching.add(where(msg).partition)
                else:
                    fresh.append(msg)
            if not ready and len(fetching) == spec.partitions:
                ready = True
                say(READY)
            batch = self._sort(fresh) + self.parked.pop_due(time.time())
            if batch:
                self._write(batch)
                written += len(batch)
                say(BATCH, len(batch))
        commit_offsets(
            self.consumer, self.consumed
        )  # nothing is parked any more: everything read is written
        self.consumer.close()
        self.db.close()
        return written

    def _sort(self, fresh: list[Message]) -> list[Message]:
        """Park the delayed records among ``fresh``; return the ones to write now."""
        now, out = time.time(), []
        for msg in fresh:
            at = where(msg)
            key = (at.topic, at.partition)
            self.consumed[key] = max(self.consumed.get(key, 0), at.offset + 1)
            if extract_id(msg.headers(), msg.value()) in self.delay:
                self.parked.park(due_time(msg.timestamp(), self.spec.delay_seconds, now), msg)
            else:
                out.append(msg)
        return out

    def _write(self, batch: list[Message]) -> None:
        rows = []
        for m in batch:
            at = where(m)
            mid = extract_id(m.headers(), m.value())
            rows.append(sink.SinkRow.of(mid, at.topic, at.partition, at.offset, m.value()))
        with self.db, self.db.cursor() as cur:
            sink.insert_rows(cur, self.spec.table, rows)
        commit_offsets(self.consumer, safe_offsets(self.consumed, self.parked.positions()))


def main(argv: list[str] | None = None) -> int:
    """Entry point of the slow consumer process.

    :param argv: ``[spec_json]``.
    """
    args = sys.argv[1:] if argv is None else argv
    written = SlowConsumer(SlowConsumerSpec.from_json(args[0])).run()
    say(DONE, written)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
