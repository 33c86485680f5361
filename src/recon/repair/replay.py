"""The Kafka side of a repair: which lost records are still there, reading them, producing them
again exactly (key, value, headers) with the plan's id in one more header, and finding the
replays of an apply that died half-way.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from recon.config import MessageIdSpec
from recon.errors import ServiceUnavailable
from recon.repair.plan_model import REPLAY_HEADER, REPLAY_MESSAGE_ID_HEADER, Replay

_TIMEOUT = 30.0


class ReplayFailed(ServiceUnavailable):
    """Kafka refused or lost a read or a replay; what was committed before stays, and a second
    apply finishes the rest."""


@dataclass(frozen=True)
class Original:
    """A record read back at its offset, as it will be produced again."""

    replay: Replay
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp_ms: int | None = None


def _consumer(config: Mapping[str, Any]) -> Any:
    from confluent_kafka import Consumer

    from recon.snapshot.offsets import _QuietLog

    return Consumer(
        {**config, "group.id": f"recon-repair-{uuid.uuid4().hex[:12]}",
         "enable.auto.commit": False, "isolation.level": "read_committed",
         "auto.offset.reset": "earliest", "enable.partition.eof": True,
         "fetch.wait.max.ms": 50},
        logger=_QuietLog(),
    )  # fmt: skip


def watermarks(config: Mapping[str, Any], topic: str) -> dict[int, tuple[int, int]]:
    """Per partition: (log-start offset, end offset) of ``topic``."""
    from confluent_kafka import TopicPartition

    consumer = _consumer(config)
    try:
        meta = consumer.list_topics(topic, timeout=_TIMEOUT).topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            raise ReplayFailed(f"topic '{topic}' does not exist or has no partitions")
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=_TIMEOUT)
            for p in sorted(meta.partitions)
        }
    except ReplayFailed:
        raise
    except Exception as exc:  # KafkaException: one line, the cause named
        raise ReplayFailed(f"topic '{topic}': {exc}") from None
    finally:
        consumer.close()


def _message_id(msg: Any, spec: MessageIdSpec) -> str | None:
    """The record's messageId by the one extraction both engines use."""
    import pyarrow as pa

    from recon.read.message_ids import extract_ids, raw_schema

    header = None
    if spec.kind == "header":
        header = next((v for k, v in msg.headers() or [] if k == spec.name), None)
    raw = pa.table(
        {"topic": [msg.topic()], "partition": [msg.partition()], "offset": [msg.offset()],
         "timestamp": pa.array([None], pa.timestamp("ms", tz="UTC")), "key": [msg.key()],
         "value": [msg.value()], "id_header": [header], "key_header": [None]},
        schema=raw_schema(),
    )  # fmt: skip
    found = extract_ids(raw, spec)["message_id"][0].as_py()
    return None if found is None else str(found)


#: A gap between two planned offsets of a partition longer than this is skipped by a seek; a
#: shorter one is read through (a seek costs a fetch round trip).
SEEK_GAP = 2000


def _next_record(consumer: Any, where: str) -> Any:
    """The next record of the assigned partition, or None at its end."""
    from confluent_kafka import KafkaError

    msg = consumer.poll(_TIMEOUT)
    if msg is None:
        raise ReplayFailed(f"{where}: nothing read in {_TIMEOUT:.0f} s")
    if msg.error() is not None:
        if msg.error().code() == KafkaError._PARTITION_EOF:
            return None
        raise ReplayFailed(f"{where}: {msg.error()}")
    return msg


def read_originals(
    config: Mapping[str, Any], topic: str, spec: MessageIdSpec, replays: Sequence[Replay]
) -> tuple[list[Original], list[tuple[Replay, str]]]:
    """Each planned record read at its offset: the records, and the ones that are gone (removed
    by retention or compaction since the plan, or another message at that offset), with why.
    Each partition is read forward through its planned offsets, seeking over long gaps."""
    from confluent_kafka import TopicPartition

    found: list[Original] = []
    gone: list[tuple[Replay, str]] = []
    by_partition: dict[int, list[Replay]] = {}
    for r in sorted(replays, key=lambda r: (r.partition, r.offset)):
        by_partition.setdefault(r.partition, []).append(r)
    consumer = _consumer(config)
    try:
        for partition, wanted in by_partition.items():
            where, msg = f"{topic}/{partition}", None
            for r in wanted:
                if msg is None or r.offset - msg.offset() > SEEK_GAP:
                    consumer.assign([TopicPartition(topic, partition, r.offset)])
                    msg = _next_record(consumer, where)
                while msg is not None and msg.offset() < r.offset:
                    msg = _next_record(consumer, where)
                if msg is None or msg.offset() != r.offset:
                    gone.append((r, f"offset {r.offset} is no longer in {where} (removed by "
                                    "retention or compaction since the plan)"))  # fmt: skip
                    continue
                if _message_id(msg, spec) != r.message_id:
                    gone.append((r, f"{where}@{r.offset} holds another messageId now"))
                    continue
                headers = tuple((k, v or b"") for k, v in msg.headers() or [])
                kind, stamp = msg.timestamp()
                found.append(Original(r, msg.key(), msg.value(), headers, stamp if kind else None))
    finally:
        consumer.close()
    return found, gone


def replayed_before(
    config: Mapping[str, Any], topic: str, plan_id: str, since: Mapping[str, int]
) -> dict[str, tuple[int, int]]:
    """The replays a previous apply of ``plan_id`` committed: messageId -> (partition, offset),
    found by their header between ``since`` (per partition) and the end of each partition."""
    from confluent_kafka import KafkaError, TopicPartition

    ends = {p: high for p, (_, high) in watermarks(config, topic).items()}
    starts = {p: int(since.get(str(p), 0)) for p in ends}
    todo = {p for p in ends if starts[p] < ends[p]}
    found: dict[str, tuple[int, int]] = {}
    if not todo:
        return found
    consumer = _consumer(config)
    try:
        consumer.assign([TopicPartition(topic, p, starts[p]) for p in sorted(todo)])
        while todo:
            msg = consumer.poll(_TIMEOUT)
            if msg is None:
                raise ReplayFailed(f"{topic}: nothing read in {_TIMEOUT:.0f} s")
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    todo.discard(msg.partition())
                    continue
                raise ReplayFailed(f"{topic}/{msg.partition()}: {msg.error()}")
            if msg.offset() >= ends[msg.partition()] - 1:
                todo.discard(msg.partition())
            # By the headers alone: a record's key (often null) says nothing about a replay.
            headers = dict(msg.headers() or [])
            mid = headers.get(REPLAY_MESSAGE_ID_HEADER)
            if headers.get(REPLAY_HEADER) == plan_id.encode() and mid is not None:
                found.setdefault(mid.decode(), (msg.partition(), msg.offset()))
    finally:
        consumer.close()
    return found


def produce(
    config: Mapping[str, Any], target: str, same_topic: bool, originals: Iterable[Original],
    plan_id: str, *, transactional: bool,
) -> dict[str, tuple[int, int]]:  # fmt: skip
    """Produce each record again to ``target`` (its own partition when ``target`` is its topic;
    by key otherwise), idempotently, in one transaction when ``transactional``.
    :returns: messageId -> (partition, offset) of each replay."""
    from confluent_kafka import KafkaException, Producer

    positions: dict[str, tuple[int, int]] = {}
    failures: list[str] = []

    def reported(mid: str) -> Any:
        # Delivery reports do not carry headers: each replay gets its own callback.
        def report(err: Any, msg: Any) -> None:
            if err is not None:
                failures.append(f"{mid}: {err}")
            else:
                positions[mid] = (msg.partition(), msg.offset())

        return report

    settings = {**config, "acks": "all", "enable.idempotence": True}
    if transactional:
        settings["transactional.id"] = f"recon-repair-{plan_id}"
    producer = Producer(settings)
    try:
        if transactional:
            producer.init_transactions(_TIMEOUT)
            producer.begin_transaction()
        for o in originals:
            extra = [(REPLAY_HEADER, plan_id.encode()),
                     (REPLAY_MESSAGE_ID_HEADER, o.replay.message_id.encode())]  # fmt: skip
            kwargs: dict[str, Any] = {"key": o.key, "value": o.value,
                                      "headers": [*o.headers, *extra],
                                      "on_delivery": reported(o.replay.message_id)}  # fmt: skip
            if same_topic:
                kwargs["partition"] = o.replay.partition
            producer.produce(target, **kwargs)
            producer.poll(0)
        if producer.flush(_TIMEOUT) != 0 or failures:
            raise ReplayFailed(f"replays to {target} not acknowledged: {failures[:3]}")
        if transactional:
            producer.commit_transaction(_TIMEOUT)
    except KafkaException as exc:
        raise ReplayFailed(f"replays to {target}: {exc}") from None
    return positions
