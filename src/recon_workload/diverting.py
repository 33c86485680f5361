"""Consumers that do not write every record they read, run as their own process:
``python -m recon_workload.diverting '<spec>'`` (issue 72).

- ``dlt``: a Spring-style consumer. A record it cannot process (its messageId in ``poison_ids``)
  goes to ``<topic>.DLT`` with the original's headers plus Spring's
  ``kafka_dlt-original-topic`` / ``-partition`` (4-byte big-endian) / ``-offset`` (8-byte) and
  ``kafka_dlt-exception-message``, as ``DeadLetterPublishingRecoverer`` writes them; every other
  record becomes a sink row. The dead-letter records are flushed before the offsets are
  committed (the recoverer's order), so every committed record is in the sink or the DLT.
- ``retry``: a retry-topic chain. A failing record (``retry_ids``) goes to ``<topic>-retry-0``
  with the same headers; a second consumer of that topic (group ``<group>-retry``) writes the
  ones that succeed on retry (``recovered_ids``) and sends the rest on to ``<topic>-dlt``.
- ``fanout``: one topic, one table per type: a record whose JSON ``type`` is ``order`` goes to
  ``table``, any other to ``other_table`` (two pipelines, one ``expect`` each).

Each reads from the group's committed offsets to the end of every partition (the producer has
finished), writes a batch's rows in one transaction, then commits the batch's offsets.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from typing import Any

from confluent_kafka import OFFSET_STORED, Producer, TopicPartition

from recon_workload import sink
from recon_workload.kafka_io import (
    base_config,
    batches_until_end,
    commit_offsets,
    group_reader,
    quiet,
    where,
)
from recon_workload.mangler import next_offsets
from recon_workload.messages import extract_id
from recon_workload.protocol import BATCH, DONE, say

#: The error text a dead-letter record carries (Spring's exception message header).
POISON_ERROR = "ListenerExecutionFailedException: cannot parse amount"
MODES = ("dlt", "retry", "fanout")


def dead_letter_topic(topic: str) -> str:
    """Where the ``dlt`` consumer sends what it cannot process (Spring's default name)."""
    return f"{topic}.DLT"


def retry_topics(topic: str) -> tuple[str, str]:
    """The ``retry`` chain's topics: the retry topic, then the dead-letter topic."""
    return f"{topic}-retry-0", f"{topic}-dlt"


def spring_headers(original: Any, error: str = POISON_ERROR) -> list[tuple[str, bytes]]:
    """The headers a Spring recoverer gives a dead-letter record of ``original``: the
    original's own, then where it was and why it failed. A record already carrying
    ``kafka_dlt-original-*`` (from a retry topic) keeps the first hop's."""
    at = where(original)
    own = [(k, v) for k, v in (original.headers() or []) if isinstance(v, bytes)]
    if any(k == "kafka_dlt-original-topic" for k, _ in own):
        return own
    return [
        *own,
        ("kafka_dlt-original-topic", at.topic.encode()),
        ("kafka_dlt-original-partition", at.partition.to_bytes(4, "big", signed=True)),
        ("kafka_dlt-original-offset", at.offset.to_bytes(8, "big", signed=True)),
        ("kafka_dlt-exception-message", error.encode()),
    ]


@dataclass(frozen=True)
class DivertingSpec:
    """What one diverting consumer process does (:data:`MODES`)."""

    mode: str
    topic: str
    partitions: int
    group: str
    table: str
    poison_ids: list[str] = field(default_factory=list)
    retry_ids: list[str] = field(default_factory=list)
    recovered_ids: list[str] = field(default_factory=list)
    other_table: str | None = None
    batch_size: int = 20

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> DivertingSpec:
        return cls(**json.loads(text))


def record_type(value: bytes | None) -> str | None:
    """The JSON ``type`` field of a value (None: none, or no JSON object)."""
    try:
        doc = json.loads(value or b"")
    except (ValueError, UnicodeDecodeError):
        return None
    return doc.get("type") if isinstance(doc, dict) else None


class Diverting:
    """One diverting consumer process's work."""

    def __init__(self, spec: DivertingSpec) -> None:
        self.spec = spec
        self.db = sink.connect()
        self.producer = Producer(quiet({**base_config(), "acks": "all"}))

    def run(self) -> int:
        """Consume to the end; return the rows written."""
        spec = self.spec
        if spec.mode not in MODES:
            raise ValueError(f"unknown mode {spec.mode!r}")
        written = self._pass(spec.topic, spec.partitions, spec.group, first=True)
        if spec.mode == "retry":
            retry, _ = retry_topics(spec.topic)
            written += self._pass(retry, spec.partitions, f"{spec.group}-retry", first=False)
        self.producer.flush(30)
        self.db.close()
        return written

    def _pass(self, topic: str, partitions: int, group: str, first: bool) -> int:
        consumer = group_reader(group)
        consumer.assign([TopicPartition(topic, p, OFFSET_STORED) for p in range(partitions)])
        written = 0
        try:
            for batch in batches_until_end(consumer, partitions, self.spec.batch_size):
                rows: dict[str, list[sink.SinkRow]] = {}
                for m in batch:
                    table = self._route(m, first)
                    if table is not None:
                        at, value = where(m), m.value()
                        mid = extract_id(m.headers(), value)
                        row = sink.SinkRow.of(mid, at.topic, at.partition, at.offset, value)
                        rows.setdefault(table, []).append(row)
                # The recoverer's order: dead letters acknowledged, rows committed, then offsets.
                assert self.producer.flush(30) == 0, "dead-letter records still in flight"
                if rows:
                    with self.db, self.db.cursor() as cur:
                        for table, some in rows.items():
                            sink.insert_rows(cur, table, some)
                    written += sum(len(r) for r in rows.values())
                    say(BATCH, sum(len(r) for r in rows.values()))
                commit_offsets(consumer, next_offsets(batch))
        finally:
            consumer.close()
        return written

    def _route(self, m: Any, first: bool) -> str | None:
        """The table ``m``'s row goes to, or None when it is sent on to a retry or dead-letter
        topic instead."""
        spec = self.spec
        mid = extract_id(m.headers(), m.value())
        if spec.mode == "fanout":
            return spec.table if record_type(m.value()) == "order" else spec.other_table
        if spec.mode == "dlt" and mid in spec.poison_ids:
            self._send(dead_letter_topic(spec.topic), m)
            return None
        if spec.mode == "retry" and first and mid in spec.retry_ids:
            self._send(retry_topics(spec.topic)[0], m)
            return None
        if spec.mode == "retry" and not first and mid not in spec.recovered_ids:
            self._send(retry_topics(spec.topic)[1], m)
            return None
        return spec.table

    def _send(self, topic: str, m: Any) -> None:
        self.producer.produce(topic, key=m.key(), value=m.value(), headers=spring_headers(m))
        self.producer.poll(0)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the diverting consumer process.

    :param argv: ``[spec_json]``.
    """
    args = sys.argv[1:] if argv is None else argv
    written = Diverting(DivertingSpec.from_json(args[0])).run()
    say(DONE, written)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
