"""The read-process-write stage (the Kafka Streams pattern), run as its own process:
``python -m recon_workload.processor '<spec json>'``.

It reads the input topic ``read_committed`` and, per batch, in one Kafka transaction, copies the
records to the output topic (same partition, key, value and headers) and commits the input
offsets with ``send_offsets_to_transaction``. Its crash window sits after the records and offsets
are sent and before ``commit_transaction``: a kill there leaves an open transaction that the next
instance's ``init_transactions`` (same ``transactional.id``) fences and aborts, so the output
topic really holds aborted records while every input record is committed exactly once.
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
    transactional_id: str
    batch_size: int = 20
    windows: bool = True

    def to_json(self) -> str:
        return json.dumps(asdict(self))


def run(spec: ProcessorSpec) -> int:
    """Copy the input topic to the output topic, transactionally; return records copied."""
    conf = base_config()
    consumer = group_reader(spec.group)
    producer = Producer(quiet({**conf, "transactional.id": spec.transactional_id, "linger.ms": 5}))
    # Fences and aborts whatever a killed predecessor left open before we read its offsets.
    producer.init_transactions(60)
    consumer.assign(
        [TopicPartition(spec.input_topic, p, OFFSET_STORED) for p in range(spec.partitions)]
    )
    copied = 0
    for batch in batches_until_end(consumer, spec.partitions, spec.batch_size):
        producer.begin_transaction()
        next_offsets: dict[int, int] = {}
        for m in batch:
            at = where(m)
            producer.produce(
                spec.output_topic,
                key=m.key(),
                value=m.value(),
                headers=m.headers(),
                partition=at.partition,
            )
            next_offsets[at.partition] = max(next_offsets.get(at.partition, 0), at.offset + 1)
        offsets = [TopicPartition(spec.input_topic, p, o) for p, o in next_offsets.items()]
        producer.send_offsets_to_transaction(offsets, consumer.consumer_group_metadata(), 30)
        # Make the records reach the log before the window, so a kill leaves them there aborted.
        producer.flush(30)
        crash_window(spec.windows)
        producer.commit_transaction(30)
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
