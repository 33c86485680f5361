"""Kafka plumbing shared by the scenarios: topics, groups, delivery tracking and full read-backs."""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from recon.config.connections import kafka_connection
from recon_workload.errors import WorkloadError
from recon_workload.messages import extract_id

# librdkafka logs every injected fault (timeouts, refused connections) at warning level; route it
# through Python logging so a run's stderr shows progress, not the faults it causes on purpose.
# RECON_WORKLOAD_CLIENT_LOG=WARNING (or DEBUG...) brings the client's own lines back.
CLIENT_LOG = logging.getLogger("recon_workload.librdkafka")
CLIENT_LOG.setLevel(os.environ.get("RECON_WORKLOAD_CLIENT_LOG", "CRITICAL").upper())

KAFKA_CONN_ID = "kafka_default"
NO_OFFSET = -1001  # confluent-kafka's OFFSET_INVALID: nothing committed


def base_config() -> dict[str, Any]:
    """The ``kafka_default`` connection's client settings (bootstrap servers and any security)."""
    return dict(kafka_connection(KAFKA_CONN_ID).config)


def quiet(conf: dict[str, Any]) -> dict[str, Any]:
    """``conf`` plus the quiet logger (see :data:`CLIENT_LOG`)."""
    return {**conf, "logger": CLIENT_LOG}


def group_reader(group: str) -> Any:
    """A consumer of ``group`` as the workload's consumers read: committed records only, offsets
    committed by hand, an end-of-partition event, the log start when the group has no offset."""
    from confluent_kafka import Consumer

    return Consumer(
        quiet(
            {
                **base_config(),
                "group.id": group,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
            }
        )
    )


@dataclass(frozen=True)
class Position:
    topic: str
    partition: int
    offset: int

    def as_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition, "offset": self.offset}


@dataclass(frozen=True)
class ReadRecord:
    """A record as read back from the topic.

    :param timestamp_ms: the record's Kafka timestamp (ms since the epoch), ``None`` if it has
        none; ``timestamp_type`` says which (``CreateTime`` or ``LogAppendTime``).
    """

    position: Position
    message_id: str | None
    value: bytes | None
    timestamp_ms: int | None = None
    timestamp_type: str | None = None


TIMESTAMP_TYPES = {TIMESTAMP_CREATE_TIME: "CreateTime", TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime"}


def record_of(msg: Message) -> ReadRecord:
    """A consumed record as the ledger needs it: position, messageId, value and timestamp."""
    kind, stamp = msg.timestamp()
    name = TIMESTAMP_TYPES.get(kind)
    value = msg.value()
    return ReadRecord(
        where(msg), extract_id(msg.headers(), value), value, stamp if name else None, name
    )


def where(msg: Message) -> Position:
    """A consumed record's position (the client types them optional; a record always has one)."""
    topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
    assert topic is not None and partition is not None and offset is not None
    return Position(topic, partition, offset)


def create_topics(
    conf: dict[str, Any],
    names: Iterable[str],
    partitions: int,
    config: Mapping[str, str] | None = None,
) -> None:
    """Create topics (auto-create is off), retrying while a same-named deleted topic lingers.

    :param partitions: partition count of every topic.
    :param config: topic settings (``cleanup.policy`` ...), the broker's defaults otherwise.
    """
    admin = AdminClient(quiet(conf))
    pending = list(names)
    deadline = time.monotonic() + 60
    while pending:
        futures = admin.create_topics(
            [NewTopic(n, num_partitions=partitions, config=dict(config or {})) for n in pending]
        )
        retry = []
        for name, future in futures.items():
            try:
                future.result(timeout=30)
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise
                retry.append(name)  # still being deleted from an earlier run with this tag
        if retry and time.monotonic() > deadline:
            raise WorkloadError(f"topics {retry} still exist 60 s after deletion was asked")
        pending = retry
        if pending:
            time.sleep(0.5)


def delete_topics(conf: dict[str, Any], names: Iterable[str]) -> None:
    """Delete the topics that exist among ``names`` and wait until the broker forgets them."""
    admin = AdminClient(quiet(conf))
    existing = set(admin.list_topics(timeout=30).topics)
    doomed = [n for n in names if n in existing]
    if not doomed:
        return
    for future in admin.delete_topics(doomed).values():
        future.result(timeout=30)
    deadline = time.monotonic() + 60
    while set(doomed) & set(admin.list_topics(timeout=30).topics):
        if time.monotonic() > deadline:
            raise WorkloadError(f"topics {doomed} did not go away within 60 s")
        time.sleep(0.3)


COORDINATOR_NOT_READY = (
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
)


def _coordinator_not_ready(error: KafkaError) -> bool:
    return bool(error.retriable()) or error.code() in COORDINATOR_NOT_READY


def delete_groups(conf: dict[str, Any], groups: Iterable[str]) -> None:
    """Delete consumer groups, ignoring ones that do not exist."""
    admin = AdminClient(quiet(conf))
    wanted = list(groups)
    deadline = time.monotonic() + 60
    while wanted:
        retry = []
        for group, future in admin.delete_consumer_groups(wanted).items():
            try:
                future.result(timeout=30)
            except KafkaException as exc:
                code = exc.args[0].code()
                if code == KafkaError.GROUP_ID_NOT_FOUND:
                    continue
                # A broker that just (re)started is still loading its group coordinator.
                if _coordinator_not_ready(exc.args[0]) and time.monotonic() < deadline:
                    retry.append(group)
                    continue
                raise
        wanted = retry
        if wanted:
            time.sleep(1)


def committed_offsets(
    conf: dict[str, Any], group: str, topic: str, partitions: int
) -> dict[int, int | None]:
    """The group's committed offset per partition (``None``: nothing committed).

    ``require_stable`` waits for pending transactional offset commits to settle.
    """
    admin = AdminClient(quiet(conf))
    request = ConsumerGroupTopicPartitions(
        group, [TopicPartition(topic, p) for p in range(partitions)]
    )
    result = admin.list_consumer_group_offsets([request], require_stable=True)[group]
    out: dict[int, int | None] = {}
    for tp in result.result(timeout=30).topic_partitions:
        out[tp.partition] = None if tp.offset < 0 else tp.offset
    return out


def alter_offsets(conf: dict[str, Any], group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Set the group's committed offsets (the group must have no active members)."""
    admin = AdminClient(quiet(conf))
    tps = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
    result = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)])
    for tp in result[group].result(timeout=30).topic_partitions:
        if tp.error:
            raise WorkloadError(f"resetting {group} on {tp.topic}[{tp.partition}]: {tp.error}")


def scan_topic(
    conf: dict[str, Any], topic: str, partitions: int, isolation: str
) -> list[ReadRecord]:
    """Read every record of ``topic`` from the beginning to the end of each partition.

    The end is the high watermark for ``read_uncommitted`` and the last stable offset for
    ``read_committed``; by the time the ledger is built every transaction has finished, so the
    two coincide.

    :param isolation: ``read_committed`` or ``read_uncommitted``.
    """
    consumer = Consumer(
        quiet(
            {
                **conf,
                "group.id": f"wl-scan-{uuid.uuid4().hex[:12]}",  # never commits
                "isolation.level": isolation,
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
            }
        )
    )
    records: list[ReadRecord] = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        done: set[int] = set()
        deadline = time.monotonic() + 120
        while len(done) < partitions:
            if time.monotonic() > deadline:
                raise WorkloadError(f"reading back {topic} ({isolation}) did not finish in 120 s")
            for msg in consumer.consume(500, timeout=1.0):
                pos = where(msg)
                if is_eof(msg):
                    done.add(pos.partition)
                    continue
                records.append(record_of(msg))
    finally:
        consumer.close()
    return records


def is_eof(msg: Message) -> bool:
    err = msg.error()
    if err is None:
        return False
    if err.code() == KafkaError._PARTITION_EOF:
        return True
    raise KafkaException(err)


def batches_until_end(consumer: Any, partitions: int, batch_size: int) -> Iterator[list[Message]]:
    """The records an assigned consumer reads, batch by batch, until each of its ``partitions``
    partitions has reported its end with nothing read after it (an empty batch is not yielded).

    :param consumer: a consumer with ``enable.partition.eof`` set.
    """
    at_end: set[int] = set()
    while len(at_end) < partitions:
        batch = []
        for msg in consumer.consume(batch_size, timeout=1.0):
            partition = where(msg).partition
            if is_eof(msg):
                at_end.add(partition)
            else:
                at_end.discard(partition)
                batch.append(msg)
        if batch:
            yield batch


def commit_offsets(consumer: Any, offsets: Mapping[tuple[str, int], int]) -> None:
    """Commit ``{(topic, partition): next offset}`` synchronously (nothing when empty)."""
    if offsets:
        tps = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        consumer.commit(offsets=tps, asynchronous=False)


@dataclass
class DeliveryTracker:
    """Collects the producer's delivery reports: which messages it saw acknowledged, and where.

    A report without error means the producer counts the record as sent; with ``acks=0`` that is
    all it ever learns (fire-and-forget), which is exactly what the ledger's ``acked`` records.
    """

    acked: dict[int, bool] = field(default_factory=dict)
    positions: dict[int, Position] = field(default_factory=dict)
    errors: dict[int, str] = field(default_factory=dict)

    def callback(self, seq: int) -> Any:
        """A delivery callback for the message with sequence number ``seq``."""

        def report(err: KafkaError | None, msg: Message) -> None:
            self.acked[seq] = err is None
            # acks=0 reports no offset (-1): the producer does not know where the record went
            offset = msg.offset()
            if err is None and offset is not None and offset >= 0:
                self.positions[seq] = where(msg)
            if err is not None:
                self.errors[seq] = str(err)

        return report
