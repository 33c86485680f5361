"""Fixtures for the integration tier: the real Kafka, PostgreSQL and Spark of `make up`.

Nothing here fakes a service. When a service is not running the tests fail with a line that says
how to start it, rather than skip: a skipped integration test proves nothing.
"""

from __future__ import annotations

import functools
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
    "test_source_verdicts.py",
    "test_payload_verdicts.py", "test_latency_verdicts.py", "test_order_verdicts.py",
    # Side by side on the two workers: they share the named scenarios' Spark groups
    # (``spark_judged``), each judging half and reading the other's (moved from the unit tier).
    "test_engine_parity.py", "test_reconcile.py",
    "test_engine_switch.py", "test_spark_connect.py", "test_cli_contract.py",
    "test_concurrent_writers.py",
    # Moved from the unit tier (issue 71), minutes of tiny Spark jobs each: 214 s and 110 s alone
    # (2026-12-06, a busy machine); the other moved files took under a minute each and run last.
    "test_payload_rules_on_spark.py", "test_ledger_store.py",
    "test_bad_input.py", "test_fault_spark.py", "test_kafka_sasl.py", "test_run_killed.py",
)  # fmt: skip


#: The files that use none of the stack's services (Spark or DuckDB over relations of their own,
#: a JVM started and read): marked ``no_services``, they run beside the serial tests that kill and
#: restart Kafka, once the unit tier has ended (scripts/test.sh), not in the two-at-a-time tier.
#: A file here that starts to use Kafka, PostgreSQL or Airflow must leave the list.
NO_SERVICES = (
    "test_payload_rules_on_spark.py", "test_ledger_store.py", "test_latency_rules_on_spark.py",
    "test_local_ledger_on_spark.py", "test_source_rules_on_spark.py",
    "test_order_rules_on_spark.py", "test_spark_kept_relations.py", "test_suites_on_spark.py",
    "test_ledger_segments_on_spark.py", "test_source_topic_rows_on_spark.py",
    "test_spark_window_read_plan.py", "test_rules_reread.py", "test_spark_class_archive_mapped.py",
    "test_spark_ui_loopback.py",
)  # fmt: skip
INTEGRATION = Path(__file__).resolve().parent


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "no_services: an integration test that uses none of the stack's services"
    )


@pytest.hookimpl(tryfirst=True)  # the marks before `-m` selects by them
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in NO_SERVICES and item.path.parent == INTEGRATION:
            item.add_marker(pytest.mark.no_services)

    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # stable: each file keeps its own order


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
    from recon.config.connections import kafka_connection
    from recon.stack.check import ServiceUnreachable, kafka_broker_count

    try:
        kafka_broker_count("kafka_default", timeout=15)
    except ServiceUnreachable as exc:
        pytest.fail(f"{exc}: start it with `make up`", pytrace=False)
    return dict(kafka_connection("kafka_default").config)


@pytest.fixture(scope="session")
def pg_kwargs() -> dict[str, Any]:
    _require_env()
    from recon.config.connections import postgres_connection
    from recon.stack.check import ServiceUnreachable, postgres_server_version

    try:
        postgres_server_version("postgres_sink")
    except ServiceUnreachable as exc:
        pytest.fail(f"{exc}: start it with `make up`", pytrace=False)
    return postgres_connection("postgres_sink").psycopg2_kwargs()


@pytest.fixture
def results_pg() -> Iterator[Any]:
    """A connection to the results database (``settings.results_conn_id()``), schema in place."""
    _require_env()
    import psycopg2

    from recon import settings
    from recon.config.connections import postgres_connection
    from recon.store import ensure_schema

    conn = psycopg2.connect(
        connect_timeout=15, **postgres_connection(settings.results_conn_id()).psycopg2_kwargs()
    )
    ensure_schema(conn)
    yield conn
    conn.close()


@pytest.fixture
def pipeline(results_pg: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    """A pipeline name of this test only; whatever was stored under it is forgotten afterwards."""
    from recon.store.pipelines import forget_pipeline

    module = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    name = f"it_{module}_{uuid.uuid4().hex[:8]}"
    yield name
    results_pg.rollback()
    forget_pipeline(results_pg, name)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from fixtures.session_settings import for_tests

    from recon.spark import spark_session

    session = for_tests(spark_session("recon-integration-tests"))
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_judged(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Each named scenario's Spark rows, judged a group of scenarios at a time
    (``fixtures.spark_batches``), shared by the session's pytest-xdist workers."""
    from fixtures.spark_batches import SparkJudged

    base = tmp_path_factory.getbasetemp()
    # Each worker's base is its own folder of the session's: their parent is shared by them
    # (and by nothing else); without workers the session's own base serves.
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    return SparkJudged(spark, shared)


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


@pytest.fixture
def kit_setup(
    tmp_path: Path, new_topic: Callable[..., str], pg_kwargs: dict[str, Any]
) -> Iterator[Callable[..., Any]]:
    """Makes one pipeline of ``everyday_kit`` (topic, group, sink table, YAML) per call:
    ``make(engine, prefix, semantics="exactly_once", idempotent=False)``; forgets and drops each
    after the test."""
    from everyday_kit import Setup

    made: list[Setup] = []

    def make(engine: str, prefix: str, semantics: str = "exactly_once",
             idempotent: bool = False) -> Setup:  # fmt: skip
        topic = new_topic(f"ev-{prefix}", partitions=1)
        s = Setup.make(tmp_path, engine, topic, pg_kwargs, prefix=prefix, semantics=semantics,
                       idempotent=idempotent)  # fmt: skip
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


@pytest.fixture
def setup(kit_setup: Callable[..., Any]) -> Callable[..., Any]:
    """``make(prefix, semantics, idempotent)``: a local-engine pipeline of the kit, for the repair
    tests (``test_repair.py``, ``test_repair_verdicts.py``). A module may declare its own
    (``test_everyday_verdicts.py``'s takes the engine as well)."""
    return functools.partial(kit_setup, "local")
