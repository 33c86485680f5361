"""Kafka errors during the offset snapshot: a refused login or right fails at once, never retried;
a restarting broker is retried; anything else is reported as it is. No services: the errors are
confluent-kafka's own ``KafkaError`` values, the clients are fakes."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from recon.config.connections import scrub
from recon.errors import ReconError
from recon.snapshot import offsets as snapshot
from recon.snapshot.offsets import (
    KafkaAuthFailed,
    KafkaSnapshotError,
    KafkaUnreachable,
    admin_client,
    error_kind,
    take_offsets,
    topic_partitions,
)

pytestmark = pytest.mark.unit

REFUSED = [
    KafkaError._AUTHENTICATION,
    KafkaError.SASL_AUTHENTICATION_FAILED,
    KafkaError.ILLEGAL_SASL_STATE,
    KafkaError.UNSUPPORTED_SASL_MECHANISM,
    KafkaError._SSL,
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.GROUP_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
]
TRANSIENT = [
    KafkaError._TRANSPORT,
    KafkaError._ALL_BROKERS_DOWN,
    KafkaError._TIMED_OUT,
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.NOT_COORDINATOR,
    KafkaError.LEADER_NOT_AVAILABLE,
]
FATAL = [KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.INVALID_REQUEST, KafkaError._INVALID_ARG]

AUTH_TEXT = (
    "sasl_plaintext://127.0.0.1:23096/bootstrap: SASL authentication error: "
    "Authentication failed: Invalid username or password"
)


@pytest.mark.parametrize("code", REFUSED)
def test_refusals_are_classified_refused(code: int) -> None:
    assert error_kind(KafkaError(code)) == "refused"


@pytest.mark.parametrize("code", TRANSIENT)
def test_restart_states_are_transient(code: int) -> None:
    assert error_kind(KafkaError(code)) == "transient"


@pytest.mark.parametrize("code", FATAL)
def test_other_errors_are_fatal(code: int) -> None:
    assert error_kind(KafkaError(code)) == "fatal"


def test_librdkafka_retriable_flag_counts_but_a_refusal_wins() -> None:
    assert error_kind(KafkaError(KafkaError.INVALID_REQUEST, retriable=True)) == "transient"
    assert error_kind(KafkaError(KafkaError._AUTHENTICATION, retriable=True)) == "refused"


def test_auth_failure_is_a_user_error() -> None:
    assert issubclass(KafkaAuthFailed, KafkaSnapshotError)
    assert issubclass(KafkaAuthFailed, ReconError)
    assert not issubclass(KafkaAuthFailed, snapshot._Retriable)


def test_scrub_masks_secret_settings() -> None:
    config = {"sasl.username": "recon", "sasl.password": "s3cr3t-pw", "ssl.key.password": "k3y"}
    text = "login recon/s3cr3t-pw refused; key k3y"
    assert scrub(text, config) == "login recon/*** refused; key ***"
    assert scrub("nothing secret", {}) == "nothing secret"


# --- fakes ---------------------------------------------------------------------------------------


def _failed(error: KafkaError) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_exception(KafkaException(error))
    return future


def _done(value: Any) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_result(value)
    return future


class FakeClock:
    """``time`` for the snapshot module: sleeping advances the clock instead of waiting."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept = 0.0

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return 1_700_000_000.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(snapshot, "time", fake)
    return fake


class FakeAdmin:
    """An AdminClient whose answers the test decides; counts every request."""

    def __init__(
        self,
        *,
        metadata_error: KafkaError | None = None,
        refusal: KafkaError | None = None,
        offsets_errors: list[KafkaError] | None = None,
        partitions: int = 2,
    ) -> None:
        self.metadata_error = metadata_error
        self.refused = refusal
        self.offsets_errors = list(offsets_errors or [])
        self.partitions = partitions
        self.calls: dict[str, int] = {"list_topics": 0, "list_offsets": 0, "group": 0}

    def refusal(self) -> KafkaError | None:
        return self.refused

    def list_topics(self, topic: str, timeout: float) -> Any:
        self.calls["list_topics"] += 1
        if self.metadata_error is not None:
            raise KafkaException(self.metadata_error)
        info = SimpleNamespace(error=None, partitions={p: None for p in range(self.partitions)})
        return SimpleNamespace(topics={topic: info})

    def list_offsets(self, request: dict[Any, Any], **_: Any) -> dict[Any, Future[Any]]:
        self.calls["list_offsets"] += 1
        if self.offsets_errors:
            error = self.offsets_errors.pop(0)
            return {tp: _failed(error) for tp in request}
        return {tp: _done(SimpleNamespace(offset=5)) for tp in request}

    def list_consumer_group_offsets(self, requests: list[Any], **_: Any) -> dict[str, Any]:
        self.calls["group"] += 1
        request = requests[0]
        tps = [SimpleNamespace(partition=tp.partition, offset=3) for tp in request.topic_partitions]
        return {request.group_id: _done(SimpleNamespace(topic_partitions=tps))}

    def describe_configs(self, resources: list[Any], **_: Any) -> dict[Any, Future[Any]]:
        """The topic's configuration: the default cleanup policy."""
        entries = {"cleanup.policy": SimpleNamespace(value="delete")}
        return {r: _done(entries) for r in resources}


# --- topic metadata (the first request of a snapshot, and the preflight check) ------------------


def test_refused_login_is_not_retried(clock: FakeClock) -> None:
    # librdkafka reports the refused login as an error event; the request itself only sees a
    # transport failure.
    admin = FakeAdmin(
        metadata_error=KafkaError(KafkaError._TRANSPORT),
        refusal=KafkaError(KafkaError._AUTHENTICATION, AUTH_TEXT),
    )
    with pytest.raises(KafkaAuthFailed, match="refused the connection's credentials.*Invalid"):
        topic_partitions(admin, "payments", timeout=5, retry_for=120)
    assert admin.calls["list_topics"] == 1
    assert clock.slept == 0


def test_unreachable_broker_is_retried_then_reported(clock: FakeClock) -> None:
    admin = FakeAdmin(metadata_error=KafkaError(KafkaError._TRANSPORT))
    with pytest.raises(KafkaUnreachable, match="Kafka did not answer"):
        topic_partitions(admin, "payments", timeout=5, retry_for=10)
    assert admin.calls["list_topics"] > 5
    assert 9 <= clock.slept <= 10


def test_unauthorized_topic_is_a_refusal_not_a_missing_topic() -> None:
    admin = FakeAdmin()
    denied = SimpleNamespace(error=KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED), partitions={})
    admin.list_topics = lambda topic, timeout: SimpleNamespace(topics={topic: denied})  # type: ignore[method-assign]
    with pytest.raises(KafkaAuthFailed):
        topic_partitions(admin, "payments")


# --- the offset requests of the snapshot (retried for 120 s when transient) ---------------------


def _snapshot(monkeypatch: pytest.MonkeyPatch, admin: FakeAdmin) -> Any:
    monkeypatch.setattr(snapshot, "admin_client", lambda config: admin)
    return take_offsets({"bootstrap.servers": "h:1"}, "payments", "g", settle_seconds=0)


def test_snapshot_refused_mid_way_fails_at_once(
    monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    admin = FakeAdmin(offsets_errors=[KafkaError(KafkaError.SASL_AUTHENTICATION_FAILED)] * 200)
    with pytest.raises(KafkaAuthFailed):
        _snapshot(monkeypatch, admin)
    assert admin.calls["list_offsets"] == 1
    assert clock.slept == 0


def test_snapshot_timeout_with_a_refused_login_fails_at_once(
    monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    admin = FakeAdmin(
        offsets_errors=[KafkaError(KafkaError._TIMED_OUT)] * 200,
        refusal=KafkaError(KafkaError._AUTHENTICATION, AUTH_TEXT),
    )
    with pytest.raises(KafkaAuthFailed, match="Invalid username or password"):
        _snapshot(monkeypatch, admin)
    assert admin.calls["list_offsets"] == 1


def test_snapshot_retries_a_restarting_broker(
    monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    admin = FakeAdmin(offsets_errors=[KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS)] * 3)
    offsets = _snapshot(monkeypatch, admin)
    assert [(o.partition, o.log_start_offset, o.committed_offset) for o in offsets] == [
        (0, 5, 3),
        (1, 5, 3),
    ]
    assert admin.calls["list_offsets"] == 3 + 3  # three failures, then earliest, latest, stable
    assert clock.slept == 3


def test_snapshot_gives_up_on_a_transient_error_after_retry_for(
    monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    admin = FakeAdmin(offsets_errors=[KafkaError(KafkaError.NOT_COORDINATOR)] * 500)
    with pytest.raises(KafkaSnapshotError) as info:
        _snapshot(monkeypatch, admin)
    assert not isinstance(info.value, KafkaAuthFailed)
    assert 119 <= clock.slept <= 120


def test_snapshot_reports_other_errors_at_once(
    monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    admin = FakeAdmin(offsets_errors=[KafkaError(KafkaError.INVALID_REQUEST)] * 5)
    with pytest.raises(KafkaSnapshotError, match="offsets of payments"):
        _snapshot(monkeypatch, admin)
    assert admin.calls["list_offsets"] == 1


# --- the real client ----------------------------------------------------------------------------


def test_admin_client_takes_the_connection_settings_and_starts_with_no_refusal() -> None:
    # Nothing listens on port 9 of loopback: a refused TCP connection is no refused login.
    admin = admin_client({"bootstrap.servers": "127.0.0.1:9", "socket.timeout.ms": 1000})
    assert admin.refusal() is None
