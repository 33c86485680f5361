"""The mangling consumer, run as its own process: ``python -m recon_workload.mangler '<spec>'``.

An at-least-once consumer (rows, then offsets; no faults injected) whose transformation is
buggy for some records: it writes every record once, but the ones named in ``mangle_ids`` with
their ``payload`` cut short (:func:`recon_workload.payload.mangle_value`), so the row's
``payload`` column and its ``payload_sha256`` (the hash of the value bytes it wrote) both differ
from the record. The records named in ``copy_ids`` it writes intact, then once more with the
next batch, mangled, as a re-delivery through the buggy path would (a duplicate whose second
copy differs).

It reads from the group's committed offsets to the end of every partition (the producer has
finished), then commits the end positions.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass

from confluent_kafka import OFFSET_STORED, Message, TopicPartition

from recon_workload import sink
from recon_workload.kafka_io import batches_until_end, commit_offsets, group_reader, where
from recon_workload.messages import extract_id
from recon_workload.payload import mangle_value
from recon_workload.protocol import BATCH, DONE, say


@dataclass(frozen=True)
class ManglerSpec:
    """What the mangling consumer process does.

    :param mangle_ids: messageIds written once, mangled.
    :param copy_ids: messageIds written intact, then again with the next batch, mangled.
    """

    topic: str
    partitions: int
    group: str
    table: str
    mangle_ids: list[str]
    copy_ids: list[str]
    batch_size: int = 20

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ManglerSpec:
        return cls(**json.loads(text))


def rows_for(
    batch: list[Message], mangle: set[str], copy: set[str]
) -> tuple[list[sink.SinkRow], list[sink.SinkRow]]:
    """The rows to write for ``batch``, and the mangled second copies to write with the next.

    :param mangle: messageIds whose only row is mangled.
    :param copy: messageIds whose row is intact and whose second copy is mangled.
    """
    rows, later = [], []
    for m in batch:
        at, value = where(m), m.value()
        mid = extract_id(m.headers(), value)
        written = mangle_value(value) if mid in mangle else value
        rows.append(sink.SinkRow.of(mid, at.topic, at.partition, at.offset, written))
        if mid in copy:
            later.append(
                sink.SinkRow.of(mid, at.topic, at.partition, at.offset, mangle_value(value))
            )
    return rows, later


def next_offsets(batch: list[Message]) -> dict[tuple[str, int], int]:
    """Per (topic, partition), the offset after the last record of ``batch`` read there."""
    out: dict[tuple[str, int], int] = {}
    for m in batch:
        at = where(m)
        out[(at.topic, at.partition)] = max(out.get((at.topic, at.partition), 0), at.offset + 1)
    return out


class Mangler:
    """One mangling consumer process's work."""

    def __init__(self, spec: ManglerSpec) -> None:
        self.spec = spec
        self.mangle, self.copy = set(spec.mangle_ids), set(spec.copy_ids)
        self.db = sink.connect()
        self.consumer = group_reader(spec.group)

    def run(self) -> int:
        """Consume to the end of every partition; return the rows written."""
        spec = self.spec
        self.consumer.assign(
            [TopicPartition(spec.topic, p, OFFSET_STORED) for p in range(spec.partitions)]
        )
        pending: list[sink.SinkRow] = []  # second copies, written with the next batch
        written = 0
        for batch in batches_until_end(self.consumer, spec.partitions, spec.batch_size):
            rows, later = rows_for(batch, self.mangle, self.copy)
            written += self._write(pending + rows, batch)
            pending = later
        written += self._write(pending, [])
        positions = self.consumer.position(self.consumer.assignment())
        commit_offsets(
            self.consumer,
            {(tp.topic, tp.partition): tp.offset for tp in positions if tp.offset >= 0},
        )
        self.consumer.close()
        self.db.close()
        return written

    def _write(self, rows: list[sink.SinkRow], batch: list[Message]) -> int:
        """Insert ``rows`` in one transaction, then commit the offsets after ``batch``."""
        if rows:
            with self.db, self.db.cursor() as cur:
                sink.insert_rows(cur, self.spec.table, rows)
            say(BATCH, len(rows))
        commit_offsets(self.consumer, next_offsets(batch))
        return len(rows)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the mangling consumer process.

    :param argv: ``[spec_json]``.
    """
    args = sys.argv[1:] if argv is None else argv
    written = Mangler(ManglerSpec.from_json(args[0])).run()
    say(DONE, written)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
