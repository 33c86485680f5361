"""The upsert consumer, run as its own process: ``python -m recon_workload.upsert '<spec>'``.

An at-least-once consumer (rows, then offsets; no faults injected) of a keyed topic that keeps
one sink row per account (:mod:`recon_workload.upsert_sink`): each record overwrites its
account's row, with no version check. For the records named in ``replay_ids`` the write lands
but its acknowledgement is taken as lost, so the consumer queues a retry; the retry queue is
drained once the consumer has caught up with every partition, that is after the account's newer
records were applied, and, with no version check, the retry puts the older record back: the
account's row ends stale (a delayed retry's stale overwrite).

It reads from the group's committed offsets to the end of every partition (the producer has
finished), then commits the end positions. :func:`read_keys` reads a topic's record keys back
for the ground truth (the ledger's read-back keeps no keys).
"""

from __future__ import annotations

import json
import sys
import uuid
from dataclasses import asdict, dataclass

from confluent_kafka import OFFSET_BEGINNING, OFFSET_STORED, Message, TopicPartition

from recon_workload import sink, upsert_sink
from recon_workload.kafka_io import Position, batches_until_end, commit_offsets, group_reader, where
from recon_workload.mangler import next_offsets
from recon_workload.messages import extract_id
from recon_workload.protocol import BATCH, DONE, say
from recon_workload.upsert_sink import UpsertRow


@dataclass(frozen=True)
class UpsertSpec:
    """What the upsert consumer process does.

    :param replay_ids: messageIds written in order, then written again once the consumer has
        caught up (the delayed retry).
    """

    topic: str
    partitions: int
    group: str
    table: str
    replay_ids: list[str]
    batch_size: int = 20

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> UpsertSpec:
        return cls(**json.loads(text))


def decode_key(key: bytes | str | None) -> str | None:
    """A record key as text; ``None`` for no key or one that is not UTF-8."""
    if key is None or isinstance(key, str):
        return key
    try:
        return key.decode("utf-8")
    except UnicodeDecodeError:
        return None


def rows_for(batch: list[Message]) -> list[UpsertRow]:
    """The upserts of ``batch``, in the order read (a later record of an account overwrites an
    earlier one of the same batch).

    :raises ValueError: for a record without a usable key: an upsert consumer has no row to
        write it to (the scenario produces none).
    """
    rows = []
    for m in batch:
        at, value = where(m), m.value()
        account = decode_key(m.key())
        if account is None:
            raise ValueError(f"the record at {at} has no UTF-8 key: no row to upsert")
        mid = extract_id(m.headers(), value)
        rows.append(UpsertRow.of(account, mid, at.partition, at.offset, value))
    return rows


def retries_of(rows: list[UpsertRow], replay: set[str]) -> list[UpsertRow]:
    """The rows among ``rows`` whose write the consumer takes for failed and will retry."""
    return [r for r in rows if r.message_id in replay]


class UpsertConsumer:
    """One upsert consumer process's work."""

    def __init__(self, spec: UpsertSpec) -> None:
        self.spec = spec
        self.replay = set(spec.replay_ids)
        self.db = sink.connect()
        self.consumer = group_reader(spec.group)

    def run(self) -> int:
        """Consume to the end of every partition, then retry; return the writes made."""
        spec = self.spec
        self.consumer.assign(
            [TopicPartition(spec.topic, p, OFFSET_STORED) for p in range(spec.partitions)]
        )
        retries: list[UpsertRow] = []
        written = 0
        for batch in batches_until_end(self.consumer, spec.partitions, spec.batch_size):
            rows = rows_for(batch)
            written += self._write(rows)
            retries += retries_of(rows, self.replay)
            commit_offsets(self.consumer, next_offsets(batch))
        written += self._write(retries)  # the delayed retries, after every newer record
        positions = self.consumer.position(self.consumer.assignment())
        commit_offsets(
            self.consumer,
            {(tp.topic, tp.partition): tp.offset for tp in positions if tp.offset >= 0},
        )
        self.consumer.close()
        self.db.close()
        return written

    def _write(self, rows: list[UpsertRow]) -> int:
        """Upsert ``rows`` in one transaction, in order."""
        if rows:
            with self.db, self.db.cursor() as cur:
                upsert_sink.upsert_rows(cur, self.spec.table, rows)
            say(BATCH, len(rows))
        return len(rows)


def read_keys(topic: str, partitions: int) -> dict[Position, str | None]:
    """Every committed record's key (decoded) by position: the topic read ``read_committed``
    from the beginning to the end of each partition, by a group of its own that commits
    nothing."""
    consumer = group_reader(f"wl-keys-{uuid.uuid4().hex[:12]}")
    out: dict[Position, str | None] = {}
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        for batch in batches_until_end(consumer, partitions, 500):
            out.update((where(m), decode_key(m.key())) for m in batch)
    finally:
        consumer.close()
    return out


def main(argv: list[str] | None = None) -> int:
    """Entry point of the upsert consumer process.

    :param argv: ``[spec_json]``.
    """
    args = sys.argv[1:] if argv is None else argv
    written = UpsertConsumer(UpsertSpec.from_json(args[0])).run()
    say(DONE, written)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
