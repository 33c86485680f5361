"""The read-process-write stage (the Kafka Streams pattern), run as its own process:
``python -m recon_workload.processor '<spec json>'``.

It reads the input topic ``read_committed`` and, per batch, in one Kafka transaction, copies the
records to the output topic (same partition, key, value and headers) and commits the input
offsets with ``send_offsets_to_transaction``. Its crash window sits after the records and offsets
are sent and before ``commit_transaction``: a kill there leaves an open transaction that the next
instance's ``init_transactions`` (same ``transactional.id``) fences and aborts, so the output
topic really holds aborted records while every input record is committed exactly once.

Without ``transactional_id`` it is the at-least-once processor: it produces the batch, waits for
its acknowledgements, and only then commits the input offsets; a kill in between (its crash
window) makes the next instance process the batch again, so the output holds it twice. With
``transform`` it adds a field to each JSON value (its messageId kept in header, key and value).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass

from confluent_kafka import OFFSET_STORED, Producer, TopicPartition

from recon_workload.kafka_io import base_config, batches_until_end, group_reader, quiet, where
from recon_workload.protocol import BATCH, DONE, crash_window, say


@dataclass(frozen=True)
class ProcessorSpec:
    """What one processor process does.

    :param group: the processor's own consumer group on the input topic.
    :param transactional_id: stable across restarts, so a new instance fences the killed one.
    """

    input_topic: str
    output_topic: str
    partitions: int
    group: str
    transactional_id: str | None
    batch_size: int = 20
    windows: bool = True
    transform: bool = False

    def to_json(self) -> str:
        return json.dumps(asdict(self))


def _transformed(value: bytes | None) -> bytes | None:
    """The value with a field added (``processed``), when it is a JSON object."""
    try:
        decoded = json.loads(value) if value is not None else None
    except ValueError:
        return value
    if not isinstance(decoded, dict):
        return value
    return json.dumps({**decoded, "processed": True}).encode()


def run(spec: ProcessorSpec) -> int:
    """Copy the input topic to the output topic (transactionally when the spec has a
    ``transactional_id``); return records copied."""
    conf = base_config()
    consumer = group_reader(spec.group)
    transactional = spec.transactional_id is not None
    extra = {"transactional.id": spec.transactional_id} if transactional else {"acks": "all"}
    producer = Producer(quiet({**conf, **extra, "linger.ms": 5}))
    if transactional:
        # Fences and aborts whatever a killed predecessor left open before we read its offsets.
        producer.init_transactions(60)
    consumer.assign(
        [TopicPartition(spec.input_topic, p, OFFSET_STORED) for p in range(spec.partitions)]
    )
    copied = 0
    for batch in batches_until_end(consumer, spec.partitions, spec.batch_size):
        if transactional:
            producer.begin_transaction()
        next_offsets: dict[int, int] = {}
        for m in batch:
            at = where(m)
            producer.produce(
                spec.output_topic,
                key=m.key(),
                value=_transformed(m.value()) if spec.transform else m.value(),
                headers=m.headers(),
                partition=at.partition,
            )
            next_offsets[at.partition] = max(next_offsets.get(at.partition, 0), at.offset + 1)
        offsets = [TopicPartition(spec.input_topic, p, o) for p, o in next_offsets.items()]
        if transactional:
            producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 30)
        # Make the records reach the log before the window, so a kill leaves them there (aborted
        # in a transaction; for good without one, their offsets not yet committed).
        if producer.flush(30):
            raise RuntimeError("the processor's records were not acknowledged within 30 s")
        crash_window(spec.windows)
        if transactional:
            producer.commit_transaction(30)
        else:
            consumer.commit(offsets=offsets, asynchronous=False)
        copied += len(batch)
        say(BATCH, len(batch))
    consumer.close()
    return copied


def main(argv: list[str] | None = None) -> int:
    """Entry point of the processor process.

    :param argv: ``[spec_json]``.
    """
    args = sys.argv[1:] if argv is None else argv
    copied = run(ProcessorSpec(**json.loads(args[0])))
    say(DONE, copied)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
