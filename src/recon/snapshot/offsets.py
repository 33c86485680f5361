"""Offset snapshot: what Kafka says about a topic and a consumer group, right now.

Per partition: the log-start offset, the last stable offset (asked for explicitly with
read_committed: the admin default gives the high watermark), the high watermark, the group's
committed offset (``require_stable``: pending transactional offset commits are waited for), and the
first offset younger than the settle time; per topic, its ``cleanup.policy`` (a compacted topic's
log cleaner removes records inside the window, not only below the log-start offset).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from recon.errors import ReconError, ServiceUnavailable
from recon.snapshot.window import PartitionOffsets

NOTHING_COMMITTED = -1001  # librdkafka's OFFSET_INVALID: the group has no offset for the partition

#: librdkafka's own log lines (a refused login logs one every few hundred ms): debug level only,
#: so that a command prints its one error line and nothing else.
_librdkafka_log = logging.getLogger("recon.kafka.librdkafka")


class KafkaSnapshotError(ReconError):
    """Kafka could not be asked, or the topic is not there."""


class KafkaUnreachable(KafkaSnapshotError, ServiceUnavailable):
    """No broker answered (down, or a wrong address)."""


class KafkaAuthFailed(KafkaSnapshotError):
    """The broker refused the connection's credentials (SASL, TLS) or their rights: asking again
    with the same settings cannot succeed, so it is never retried."""


class _Retriable(KafkaSnapshotError):
    """A transient broker state (a broker restarting, a coordinator still loading)."""


def _codes(*names: str) -> frozenset[int]:
    from confluent_kafka import KafkaError

    return frozenset(getattr(KafkaError, n) for n in names if hasattr(KafkaError, n))


def refused_codes() -> frozenset[int]:
    """Error codes that mean "not you" or "not allowed": authentication and authorization."""
    return _codes(
        "_AUTHENTICATION", "SASL_AUTHENTICATION_FAILED", "ILLEGAL_SASL_STATE",
        "UNSUPPORTED_SASL_MECHANISM", "_SSL", "CLUSTER_AUTHORIZATION_FAILED",
        "TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED",
        "DELEGATION_TOKEN_AUTHORIZATION_FAILED",
    )  # fmt: skip


def transient_codes() -> frozenset[int]:
    """States a restarting broker passes through; librdkafka does not flag them all as
    retriable."""
    return _codes(
        "COORDINATOR_LOAD_IN_PROGRESS", "NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE",
        "UNKNOWN_LEADER_EPOCH", "NOT_LEADER_FOR_PARTITION", "LEADER_NOT_AVAILABLE",
        "REQUEST_TIMED_OUT", "_TRANSPORT", "_ALL_BROKERS_DOWN", "_TIMED_OUT",
    )  # fmt: skip


def error_kind(error: Any) -> str:
    """``refused`` (credentials or rights: never retried), ``transient`` (retried for up to
    ``retry_for`` seconds) or ``fatal`` (reported at once), for a ``confluent_kafka.KafkaError``.

    A refusal wins over librdkafka's own ``retriable()`` flag: the same credentials are refused
    again.
    """
    code = getattr(error, "code", lambda: None)()
    if code in refused_codes():
        return "refused"
    if getattr(error, "retriable", lambda: False)() or code in transient_codes():
        return "transient"
    return "fatal"


class _QuietLog:
    """A ``logger`` for librdkafka: its lines go to Python logging at debug level."""

    def log(self, level: int, fmt: str, *args: Any) -> None:
        _librdkafka_log.debug(fmt, *args)


class Refusals:
    """A librdkafka client's error callback that keeps the first refusal reported to it.

    librdkafka tells of a refused SASL login only as an error event for this callback (served by
    ``poll()`` or ``consume()``); the request that needed the connection just times out, and a
    consumer just hands back nothing.
    """

    def __init__(self) -> None:
        self.error: Any = None

    def __call__(self, error: Any) -> None:
        if self.error is None and error_kind(error) == "refused":
            self.error = error


def without_callbacks(config: Mapping[str, Any]) -> dict[str, Any]:
    """A connection's client settings without callbacks: a client of the product sets its own
    (:class:`Refusals`, :class:`_QuietLog`)."""
    return {k: v for k, v in config.items() if k not in ("error_cb", "logger")}


def admin_client(config: Mapping[str, Any]) -> Any:
    """An AdminClient that remembers the first refusal librdkafka reports (:class:`Refusals`):
    its ``refusal()`` polls for it, so a refused login is told apart from a broker that is
    down.
    """
    from confluent_kafka.admin import AdminClient

    refusals = Refusals()

    class _WatchedAdmin(AdminClient):
        def refusal(self) -> Any:
            self.poll(0)
            return refusals.error

    # Callbacks go as keyword arguments: confluent-kafka merges them into the settings.
    return _WatchedAdmin(without_callbacks(config), error_cb=refusals, logger=_QuietLog())


def _refusal(admin: Any) -> Any:
    check = getattr(admin, "refusal", None)
    return check() if check is not None else None


def refused(error: Any) -> KafkaAuthFailed:
    """The exception for a refusal (a ``KafkaError`` whose :func:`error_kind` is ``refused``)."""
    text = error.str() if hasattr(error, "str") else str(error)
    return KafkaAuthFailed(f"the broker refused the connection's credentials: {text}")


def _result(future: Any, what: str, timeout: float, admin: Any = None) -> Any:
    from confluent_kafka import KafkaException

    try:
        return future.result(timeout=timeout)
    except KafkaException as exc:
        error = exc.args[0] if exc.args else exc
        kind = error_kind(error)
        if kind == "refused":
            raise refused(error) from None
        refusal = _refusal(admin)
        if refusal is not None:
            raise refused(refusal) from None
        if kind == "transient":
            raise _Retriable(f"{what}: {error}") from None
        raise KafkaSnapshotError(f"{what}: {error}") from None
    except TimeoutError:
        refusal = _refusal(admin)
        if refusal is not None:
            raise refused(refusal) from None
        raise _Retriable(f"{what}: no answer within {timeout:.0f} s") from None


def _with_retries(call: Any, retry_for: float, delay: float = 1.0) -> Any:
    """``call()`` until it succeeds or ``retry_for`` seconds have passed (at least one try).
    Only :class:`_Retriable` is retried: a refusal or any other error ends it at once."""
    deadline = time.monotonic() + retry_for
    while True:
        try:
            return call()
        except _Retriable:
            if time.monotonic() + delay > deadline:
                raise
            time.sleep(delay)


def _metadata(admin: Any, topic: str, timeout: float) -> Any:
    """``list_topics`` asked in slices of at most a second, so that a refused login (reported
    within a second) ends the wait instead of the whole ``timeout``."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout
    while True:
        started = time.monotonic()
        budget = max(0.1, min(1.0, deadline - started))
        try:
            return admin.list_topics(topic=topic, timeout=budget)
        except KafkaException:
            refusal = _refusal(admin)
            if refusal is not None:
                raise refused(refusal) from None
            # An answer that came before the slice ran out is the broker's own: report it.
            if time.monotonic() >= deadline or time.monotonic() - started < budget * 0.9:
                raise


def topic_partitions(
    admin: Any, topic: str, timeout: float = 15.0, retry_for: float = 0.0
) -> list[int]:
    """The partitions of ``topic``.

    :param retry_for: keep asking an unreachable broker this many seconds (a restart).
    :raises KafkaAuthFailed: the broker refused the credentials (at once, never retried).
    :raises KafkaUnreachable: no broker answered within ``timeout`` (and ``retry_for``).
    :raises KafkaSnapshotError: when the topic does not exist.
    """
    from confluent_kafka import KafkaException

    def ask() -> Any:
        try:
            return _metadata(admin, topic, timeout)
        except KafkaException as exc:
            raise _Retriable(f"Kafka did not answer: {exc}") from None

    try:
        metadata = _with_retries(ask, retry_for)
    except _Retriable as exc:
        raise KafkaUnreachable(str(exc)) from None
    info = metadata.topics.get(topic)
    if info is not None and info.error is not None and error_kind(info.error) == "refused":
        raise refused(info.error)
    if info is None or info.error is not None or not info.partitions:
        raise KafkaSnapshotError(f"topic '{topic}' does not exist")
    return sorted(info.partitions)


def list_offsets(
    admin: Any,
    topic: str,
    partitions: list[int],
    spec: Any,
    timeout: float = 30.0,
    retry_for: float = 120.0,
    **kwargs: Any,
) -> dict[int, int]:
    """The offset ``spec`` (confluent-kafka's ``OffsetSpec``) names in each partition of
    ``topic``, by partition (-1 where a timestamp is past every record).

    :param kwargs: for ``AdminClient.list_offsets`` (``isolation_level``).
    :raises KafkaAuthFailed: the broker refused the credentials (never retried).
    :raises KafkaSnapshotError: Kafka did not answer in time, or refused.
    """
    from confluent_kafka import TopicPartition

    def ask() -> dict[int, int]:
        futures = admin.list_offsets({TopicPartition(topic, p): spec for p in partitions}, **kwargs)
        what = f"offsets of {topic}"
        return {
            tp.partition: _result(f, f"{what}[{tp.partition}]", timeout, admin).offset
            for tp, f in futures.items()
        }

    return dict(_with_retries(ask, retry_for))


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
    :raises KafkaAuthFailed: the broker refused the credentials (never retried).
    :raises KafkaSnapshotError: Kafka did not answer in time, or refused.
    """
    from confluent_kafka import ConsumerGroupTopicPartitions, IsolationLevel, TopicPartition
    from confluent_kafka.admin import OffsetSpec as _OffsetSpec  # type: ignore[attr-defined]

    OffsetSpec: Any = _OffsetSpec  # untyped in confluent-kafka's stubs
    admin = admin_client(kafka_config)
    partitions = topic_partitions(admin, topic, timeout, retry_for)
    tps = [TopicPartition(topic, p) for p in partitions]
    now = time.time() if now is None else now
    settle_ms = int((now - settle_seconds) * 1000)

    def offsets_for(spec: Any, **kwargs: Any) -> dict[int, int]:
        return list_offsets(admin, topic, partitions, spec, timeout, retry_for, **kwargs)

    log_start = offsets_for(OffsetSpec.earliest())
    high = offsets_for(OffsetSpec.latest())
    stable = offsets_for(OffsetSpec.latest(), isolation_level=IsolationLevel.READ_COMMITTED)
    settled = offsets_for(OffsetSpec.for_timestamp(settle_ms)) if settle_seconds > 0 else {}

    def group_offsets() -> Any:
        request = ConsumerGroupTopicPartitions(consumer_group, tps)
        futures = admin.list_consumer_group_offsets([request], require_stable=True)
        what = f"committed offsets of group '{consumer_group}'"
        return _result(futures[consumer_group], what, timeout, admin)

    group = _with_retries(group_offsets, retry_for)
    configs = topic_configs(admin, topic, ("cleanup.policy", "message.timestamp.type"), timeout)
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
            cleanup_policy=configs["cleanup.policy"],
            timestamp_type=configs["message.timestamp.type"],
        )
        for p in partitions
    ]


def topic_configs(
    admin: Any, topic: str, names: tuple[str, ...], timeout: float = 15.0
) -> dict[str, str | None]:
    """The values of the topic's configuration entries ``names`` (``cleanup.policy``,
    ``message.timestamp.type``), asked in one request; None for an entry that cannot be read
    (no DescribeConfigs right, a broker that does not answer): a run is never refused for it.

    :param admin: an AdminClient (:func:`admin_client`).
    """
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        ConfigResource,
        ResourceType,
    )

    resource = ConfigResource(ResourceType.TOPIC, topic)
    try:
        future = admin.describe_configs([resource], request_timeout=timeout)[resource]
        entries = future.result(timeout=timeout)
    except (KafkaException, TimeoutError):
        return dict.fromkeys(names)
    values: dict[str, str | None] = {}
    for name in names:
        entry = entries.get(name)
        values[name] = None if entry is None or entry.value is None else str(entry.value)
    return values
