"""The sink consumer, run as its own process so it can really be killed: ``python -m
recon_workload.consumer '<spec json>'``.

It reads the topic with manual partition assignment under the run's consumer group id (so
offsets are committed to the group, yet a killed process leaves no member behind to wait for) and
writes one sink row per record, in one of four orders of side effects:

- ``commit_then_write``: commit offsets to Kafka, then write rows (at-most-once: a kill loses).
- ``write_then_commit``: write rows, then commit offsets (at-least-once: a kill duplicates).
- ``idempotent``: rows plus processed ids in one PostgreSQL transaction, skipping known ids.
- ``transactional_sink``: rows plus next offsets in one PostgreSQL transaction; it resumes from
  the stored offsets, and mirrors them to the group so the product sees its progress.

The crash window sits between the two side effects. Two options shape a consumer group with more
than one member writing into the same sink: ``assigned`` gives a process only some partitions (the
other members read the rest), and ``hold_transactions`` keeps its first sink transactions open,
rows inserted but not committed, until the supervisor says go (a long transaction: the sink's
ingest sequence then differs from its commit order).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass

from confluent_kafka import OFFSET_STORED, Consumer, Message, TopicPartition

from recon_workload import sink
from recon_workload.kafka_io import base_config, batches_until_end, commit_offsets, quiet, where
from recon_workload.messages import extract_id
from recon_workload.protocol import BATCH, DONE, crash_window, hold_point, say

MODES = ("commit_then_write", "write_then_commit", "idempotent", "transactional_sink")


@dataclass(frozen=True)
class ConsumerSpec:
    """What one consumer process does.

    :param mode: one of :data:`MODES`.
    :param isolation: ``read_committed`` or ``read_uncommitted``.
    :param stop_after: leave cleanly once this many records are processed (``None``: read to
        the end of every partition).
    :param windows: stop at crash windows (and hold points) for the supervisor.
    :param assigned: the partitions this process reads (``None``: all ``partitions``); another
        member of the group reads the others.
    :param hold_transactions: this many of the process's first sink transactions stop at a hold
        point (rows inserted, transaction open) until the supervisor answers ``go``.
    """

    mode: str
    topic: str
    partitions: int
    group: str
    table: str
    isolation: str = "read_committed"
    batch_size: int = 20
    stop_after: int | None = None
    windows: bool = True
    assigned: list[int] | None = None
    hold_transactions: int = 0

    @property
    def reads(self) -> list[int]:
        """The partitions this process reads."""
        return list(range(self.partitions)) if self.assigned is None else list(self.assigned)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ConsumerSpec:
        return cls(**json.loads(text))


def _next_offsets(batch: list[Message]) -> dict[tuple[str, int], int]:
    out: dict[tuple[str, int], int] = {}
    for m in batch:
        at = where(m)
        key = (at.topic, at.partition)
        out[key] = max(out.get(key, 0), at.offset + 1)
    return out


def _rows(batch: list[Message]) -> list[sink.SinkRow]:
    rows = []
    for m in batch:
        at = where(m)
        mid = extract_id(m.headers(), m.value())
        rows.append(sink.SinkRow.of(mid, at.topic, at.partition, at.offset, m.value()))
    return rows


def _first_time(message_id: str | None, fresh: set[str]) -> bool:
    """Whether the idempotent consumer writes this row; takes the id out of ``fresh`` so a
    second copy in the same batch (a producer retry) is skipped too.

    A record without an id cannot be de-duplicated: it is written as it comes.
    """
    if message_id is None:
        return True
    if message_id in fresh:
        fresh.discard(message_id)
        return True
    return False


class SinkConsumer:
    """One consumer process's work.

    :param spec: what to read, where to write, in which order.
    """

    def __init__(self, spec: ConsumerSpec) -> None:
        if spec.mode not in MODES:
            raise ValueError(f"unknown consumer mode {spec.mode!r}")
        self.spec = spec
        self.transactions = 0
        self.db = sink.connect()
        self.consumer = Consumer(
            quiet(
                {
                    **base_config(),
                    "group.id": spec.group,
                    "isolation.level": spec.isolation,
                    "enable.auto.commit": False,
                    "enable.partition.eof": True,
                    "auto.offset.reset": "earliest",
                }
            )
        )

    def run(self) -> int:
        """Consume until every partition is at its end (or ``stop_after``); return records done."""
        self._assign()
        spec, processed = self.spec, 0
        for batch in batches_until_end(self.consumer, len(spec.reads), spec.batch_size):
            self._handle(batch)
            processed += len(batch)
            say(BATCH, len(batch))
            if spec.stop_after is not None and processed >= spec.stop_after:
                break
        if spec.stop_after is None:
            # Offsets skipped without a record (transaction markers, aborted records) are
            # progress too: commit the end position so the group's offset covers everything.
            self._commit_positions()
        self.consumer.close()
        self.db.close()
        return processed

    def _assign(self) -> None:
        spec = self.spec
        start: dict[int, int] = {}
        if spec.mode == "transactional_sink":
            with self.db, self.db.cursor() as cur:
                stored = sink.stored_offsets(cur, spec.table)
            start = {p: o for (t, p), o in stored.items() if t == spec.topic}
            # The database is the source of truth; the group only mirrors it (a kill after the
            # PostgreSQL commit leaves the group behind until this catch-up).
            commit_offsets(self.consumer, {(spec.topic, p): o for p, o in start.items()})
        self.consumer.assign(
            [TopicPartition(spec.topic, p, start.get(p, OFFSET_STORED)) for p in spec.reads]
        )

    def _handle(self, batch: list[Message]) -> None:
        mode, table, offsets = self.spec.mode, self.spec.table, _next_offsets(batch)
        if mode == "commit_then_write":
            commit_offsets(self.consumer, offsets)
            crash_window(self.spec.windows)
            with self.db, self.db.cursor() as cur:
                sink.insert_rows(cur, table, _rows(batch))
                self._hold()
            return
        with self.db, self.db.cursor() as cur:
            rows = _rows(batch)
            if mode == "idempotent":
                fresh = sink.claim_new_ids(cur, table, [r.message_id for r in rows if r.message_id])
                rows = [r for r in rows if _first_time(r.message_id, fresh)]
            sink.insert_rows(cur, table, rows)
            if mode == "transactional_sink":
                sink.store_offsets(cur, table, offsets)
            self._hold()
        crash_window(self.spec.windows)
        commit_offsets(self.consumer, offsets)

    def _hold(self) -> None:
        """Keep the open sink transaction open at a hold point, for the first few batches."""
        self.transactions += 1
        if self.transactions <= self.spec.hold_transactions:
            hold_point(self.spec.windows)

    def _commit_positions(self) -> None:
        positions = self.consumer.position(self.consumer.assignment())
        ends = {(tp.topic, tp.partition): tp.offset for tp in positions if tp.offset >= 0}
        if self.spec.mode == "transactional_sink" and ends:
            with self.db, self.db.cursor() as cur:
                sink.store_offsets(cur, self.spec.table, ends)
        commit_offsets(self.consumer, ends)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the consumer process.

    :param argv: ``[spec_json]``.
    """
    args = sys.argv[1:] if argv is None else argv
    spec = ConsumerSpec.from_json(args[0])
    processed = SinkConsumer(spec).run()
    say(DONE, processed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
