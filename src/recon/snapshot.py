"""Offset snapshot: what Kafka says about a topic and a consumer group, right now.

Per partition: the log-start offset, the last stable offset (asked for explicitly with
read_committed: the admin default gives the high watermark), the high watermark, the group's
committed offset (``require_stable``: pending transactional offset commits are waited for), and the
first offset younger than the settle time.
"""

from __future__ import annotations

import time
from typing import Any

from recon.errors import ReconError
from recon.window import PartitionOffsets

NOTHING_COMMITTED = -1001  # librdkafka's OFFSET_INVALID: the group has no offset for the partition


class KafkaSnapshotError(ReconError):
    """Kafka could not be asked, or the topic is not there."""


def _result(future: Any, what: str, timeout: float) -> Any:
    from confluent_kafka import KafkaException

    try:
        return future.result(timeout=timeout)
    except KafkaException as exc:
        error = exc.args[0] if exc.args else exc
        if getattr(error, "retriable", lambda: False)() or _transient(error):
            raise _Retriable(f"{what}: {error}") from None
        raise KafkaSnapshotError(f"{what}: {error}") from None
    except TimeoutError:
        raise _Retriable(f"{what}: no answer within {timeout:.0f} s") from None


def _transient(error: Any) -> bool:
    """States a restarting broker passes through; librdkafka does not flag them all as
    retriable."""
    from confluent_kafka import KafkaError

    codes = (
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.UNKNOWN_LEADER_EPOCH,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._TIMED_OUT,
    )
    return bool(getattr(error, "code", lambda: None)() in codes)


class KafkaUnreachable(KafkaSnapshotError):
    """No broker answered (down, wrong address, or refused our credentials)."""


class _Retriable(KafkaSnapshotError):
    """A transient broker state (a broker restarting, a coordinator still loading)."""


def _with_retries(call: Any, retry_for: float, delay: float = 1.0) -> Any:
    """``call()`` until it succeeds or ``retry_for`` seconds have passed (at least one try)."""
    deadline = time.monotonic() + retry_for
    while True:
        try:
            return call()
        except _Retriable:
            if time.monotonic() + delay > deadline:
                raise
            time.sleep(delay)


def topic_partitions(
    admin: Any, topic: str, timeout: float = 15.0, retry_for: float = 0.0
) -> list[int]:
    """The partitions of ``topic``.

    :param retry_for: keep asking an unreachable broker this many seconds (a restart).
    :raises KafkaSnapshotError: when Kafka does not answer or the topic does not exist.
    """
    from confluent_kafka import KafkaException

    def ask() -> Any:
        try:
            return admin.list_topics(topic=topic, timeout=timeout)
        except KafkaException as exc:
            raise _Retriable(f"Kafka did not answer: {exc}") from None

    try:
        metadata = _with_retries(ask, retry_for)
    except _Retriable as exc:
        raise KafkaUnreachable(str(exc)) from None
    info = metadata.topics.get(topic)
    if info is None or info.error is not None or not info.partitions:
        raise KafkaSnapshotError(f"topic '{topic}' does not exist")
    return sorted(info.partitions)


def take_offsets(
    kafka_config: dict[str, Any],
    topic: str,
    consumer_group: str,
    settle_seconds: float,
    now: float | None = None,
    timeout: float = 30.0,
    retry_for: float = 120.0,
) -> list[PartitionOffsets]:
    """Snapshot every partition of ``topic`` for ``consumer_group``.

    :param kafka_config: librdkafka client settings (from the pipeline's Kafka connection).
    :param topic: the pipeline's topic.
    :param consumer_group: the group whose committed offsets end the window.
    :param settle_seconds: records younger than this are pending.
    :param now: the snapshot time in epoch seconds (default: the clock).
    :param timeout: seconds to wait for each answer.
    :param retry_for: how long transient errors (a broker restarting) are retried per request.
    :raises KafkaSnapshotError: Kafka did not answer in time, or refused.
    """
    from confluent_kafka import ConsumerGroupTopicPartitions, IsolationLevel, TopicPartition
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.admin import OffsetSpec as _OffsetSpec  # type: ignore[attr-defined]

    OffsetSpec: Any = _OffsetSpec  # untyped in confluent-kafka's stubs
    admin = AdminClient(dict(kafka_config))
    partitions = topic_partitions(admin, topic, timeout, retry_for)
    tps = [TopicPartition(topic, p) for p in partitions]
    now = time.time() if now is None else now
    settle_ms = int((now - settle_seconds) * 1000)

    def offsets_for(spec: Any, **kwargs: Any) -> dict[int, int]:
        def ask() -> dict[int, int]:
            futures = admin.list_offsets({tp: spec for tp in tps}, **kwargs)
            return {
                tp.partition: _result(f, f"offsets of {topic}[{tp.partition}]", timeout).offset
                for tp, f in futures.items()
            }

        return dict(_with_retries(ask, retry_for))

    log_start = offsets_for(OffsetSpec.earliest())
    high = offsets_for(OffsetSpec.latest())
    stable = offsets_for(OffsetSpec.latest(), isolation_level=IsolationLevel.READ_COMMITTED)
    settled = offsets_for(OffsetSpec.for_timestamp(settle_ms)) if settle_seconds > 0 else {}

    def group_offsets() -> Any:
        request = ConsumerGroupTopicPartitions(consumer_group, tps)
        futures = admin.list_consumer_group_offsets([request], require_stable=True)
        what = f"committed offsets of group '{consumer_group}'"
        return _result(futures[consumer_group], what, timeout)

    group = _with_retries(group_offsets, retry_for)
    committed = {
        tp.partition: (None if tp.offset < 0 else tp.offset) for tp in group.topic_partitions
    }
    return [
        PartitionOffsets(
            topic=topic,
            partition=p,
            log_start_offset=log_start[p],
            last_stable_offset=stable[p],
            high_watermark=high[p],
            committed_offset=committed.get(p),
            settled_offset=settled.get(p) if settled.get(p, -1) >= 0 else None,
        )
        for p in partitions
    ]
