"""Fixtures for the integration tier: the real Kafka, PostgreSQL and Spark of `make up`.

Nothing here fakes a service. When a service is not running the tests fail with a line that says
how to start it, rather than skip: a skipped integration test proves nothing.
"""

from __future__ import annotations

import fcntl
import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

#: The files that take longest, started first when two run at once (scripts/test.sh hands whole
#: files to two workers in collection order, with --no-loadscope-reorder: pytest-xdist would
#: otherwise order them by their number of tests): the last minutes are then short files on both
#: workers, not one long file beside an idle one.
LONGEST_FIRST = (
    "test_engine_vs_workload.py", "test_everyday_verdicts.py", "test_workload.py",
    "test_engine_switch.py", "test_cli_contract.py", "test_concurrent_writers.py",
    "test_bad_input.py", "test_fault_spark.py", "test_kafka_sasl.py", "test_run_killed.py",
)  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: each file keeps its own order


@pytest.fixture(scope="session", autouse=True)
def _one_fault_proxy_at_a_time() -> Iterator[None]:
    """The workload's fault proxy (``recon_workload.proxy``) listens on the one port the broker
    advertises for its FAULTY listener: two test processes (``-n 2``) that both run a proxied
    scenario (at_least_once, the exactly-once ones) at once would fail with 'Address already in
    use'. A lock file shared by the processes lets one proxy run at a time; the other waits for
    the few seconds of its producing."""
    from recon_workload.proxy import FaultProxy

    state = os.environ.get("RECON_STATE") or str(Path(__file__).resolve().parents[2] / ".state")
    os.makedirs(state, exist_ok=True)
    lock_path = os.path.join(state, "fault-proxy.lock")
    enter, leave = FaultProxy.__enter__, FaultProxy.__exit__
    held: dict[int, int] = {}  # id(proxy) -> the lock file's descriptor

    def locked_enter(self: FaultProxy) -> FaultProxy:
        fd = os.open(lock_path, os.O_CREAT | os.O_RDWR, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            entered = enter(self)
        except BaseException:
            os.close(fd)  # closing the descriptor releases the lock
            raise
        held[id(self)] = fd
        return entered

    def locked_exit(self: FaultProxy, *exc: object) -> None:
        try:
            leave(self, *exc)
        finally:
            fd = held.pop(id(self), None)
            if fd is not None:
                os.close(fd)

    FaultProxy.__enter__ = locked_enter  # type: ignore[method-assign]
    FaultProxy.__exit__ = locked_exit  # type: ignore[method-assign]
    yield
    FaultProxy.__enter__ = enter  # type: ignore[method-assign]
    FaultProxy.__exit__ = leave  # type: ignore[method-assign]


def _require_env() -> None:
    if "AIRFLOW_CONN_POSTGRES_SINK" not in os.environ:
        pytest.fail(
            "the project's environment is not loaded: run the tests with `make test` "
            "or `scripts/with-env.sh python -m pytest ...`",
            pytrace=False,
        )


@pytest.fixture(scope="session")
def kafka_config() -> dict[str, str]:
    _require_env()
    from recon.connections import kafka_connection
    from recon.stackcheck import ServiceUnreachable, kafka_broker_count

    try:
        kafka_broker_count("kafka_default", timeout=15)
    except ServiceUnreachable as exc:
        pytest.fail(f"{exc}: start it with `make up`", pytrace=False)
    return dict(kafka_connection("kafka_default").config)


@pytest.fixture(scope="session")
def pg_kwargs() -> dict[str, Any]:
    _require_env()
    from recon.connections import postgres_connection
    from recon.stackcheck import ServiceUnreachable, postgres_server_version

    try:
        postgres_server_version("postgres_sink")
    except ServiceUnreachable as exc:
        pytest.fail(f"{exc}: start it with `make up`", pytrace=False)
    return postgres_connection("postgres_sink").psycopg2_kwargs()


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from recon.spark import spark_session

    session = spark_session("recon-integration-tests")
    yield session
    session.stop()


@pytest.fixture
def new_topic(kafka_config: dict[str, str]) -> Iterator[Callable[..., str]]:
    """Creates uniquely named topics and deletes them after the test."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(kafka_config)
    created: list[str] = []

    def make(prefix: str = "it", partitions: int = 1) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:10]}"
        futures = admin.create_topics([NewTopic(name, num_partitions=partitions)])
        futures[name].result(timeout=30)
        created.append(name)
        return name

    yield make
    if created:
        for future in admin.delete_topics(created).values():
            future.result(timeout=30)
