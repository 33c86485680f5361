"""The transactional outbox published by Debezium on the stack's Kafka Connect worker (issue 74):
the stack's part (the plugin loaded, a replication role with no more rights than it needs, on
loopback), then the ``outbox_debezium`` workload's faults judged by the product (local engine)
exactly as the ground truth says: the worker killed mid-stream (duplicates in the topic, one sink
row each), the connector paused while rows keep coming (a run meanwhile says nothing
unpublished), rows skipped by a lost slot (unpublished), outbox rows deleted right after insert
(the source declared as the outbox's change topic: docs/algorithm.md, "An outbox published by
Debezium").

One pair of connectors of the module's own (``RECON_WORKLOAD_DEBEZIUM``) serves every run in
turn, and is removed with its slots and publication at the end. The test that kills the worker
every Connect user shares runs with the serial tests (the suite then makes the pair once more in
that tier's process).
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import psycopg2
import pytest
from fixtures.kafka_read import read_topic
from fixtures.pipelines import WORKLOAD_PIPELINE
from fixtures.verdicts import assert_same_verdicts, expected_verdicts
from fixtures.workload_runs import query

from recon.config import load_pipelines
from recon.run.steps import results_db, results_path, run_pipeline
from recon.store import forget_pipeline
from recon_workload import HoldGate, ScenarioResult, debezium, remove_run, run_scenario
from recon_workload.scenarios_debezium import change_event_id

pytestmark = pytest.mark.integration

SCENARIO = "outbox_debezium"
MESSAGES, PARTITIONS, SEED = 120, 2, 7

TABLE_SOURCE = """    source:
      connection: postgres_sink
      table: {table}
      message_id_column: message_id
      time_column: created_at
      key_column: seq
"""
#: The outbox's change topic as the source: each create event names its row's messageId.
TOPIC_SOURCE = """    source:
      connection: kafka_default
      topic: {topic}
      message_id: {{json_field: after.message_id}}
"""


@pytest.fixture(scope="module")
def connectors() -> Iterator[debezium.Connectors]:
    """The module's own connectors, made once, removed with their slots and publication."""
    name = f"recon-test-{uuid.uuid4().hex[:6]}"
    before = os.environ.get(debezium.NAME_VARIABLE)
    os.environ[debezium.NAME_VARIABLE] = name
    made = debezium.connectors()
    try:
        debezium.ensure(made)
        yield made
    finally:
        debezium.remove(made)
        if before is None:
            os.environ.pop(debezium.NAME_VARIABLE, None)
        else:
            os.environ[debezium.NAME_VARIABLE] = before


@pytest.fixture(scope="module")
def runs() -> Iterator[list[str]]:
    """Run tags to remove when the module ends."""
    tags: list[str] = []
    yield tags
    for tag in tags:
        remove_run(SCENARIO, tag)


def _reconcile(
    truth: ScenarioResult, tmp_path: Path, source: str, settle: int = 0
) -> tuple[dict[str, tuple[str, bool]], dict[str, int]]:
    """One local-engine run of a pipeline over the scenario's topic, group and sink with
    ``source``; its verdicts keyed like the ledger, and its counts."""
    name = f"dbz_{uuid.uuid4().hex[:8]}"
    yaml_path = tmp_path / f"{name}.yaml"
    text = WORKLOAD_PIPELINE.format(
        name=name, semantics="at_least_once", topic=truth.topic, group=truth.consumer_group,
        table=truth.sink_table, idempotent="false", engine="local",
    )  # fmt: skip
    yaml_path.write_text(text.replace("settle_seconds: 0", f"settle_seconds: {settle}") + source)
    cfg = load_pipelines(yaml_path)[name]
    data_dir = str(tmp_path / name)
    try:
        summary = run_pipeline(cfg, "run-1", None, data_dir=data_dir)
        rows = duckdb.sql(
            "SELECT message_id, verdict, topic_duplicate FROM read_parquet("
            f"'{results_path(data_dir, name, 'run-1')}/**/*.parquet')"
        ).fetchall()
    finally:
        with results_db() as pg:
            forget_pipeline(pg, name)
    verdicts = {mid: (verdict, bool(dup)) for mid, verdict, dup in rows}
    assert len(verdicts) == len(rows), "a message judged twice"
    counts = {v: n for v, n in summary.counts.items() if n and v != "topic_duplicate"}
    return verdicts, counts


def test_the_worker_runs_debezium_with_a_replication_role_of_least_rights(
    connectors: debezium.Connectors, pg_kwargs: dict[str, Any]
) -> None:
    role = os.environ["RECON_PG_DEBEZIUM_USER"]
    (flags,) = query(
        pg_kwargs,
        "SELECT rolcanlogin, rolreplication, rolsuper, rolcreatedb, rolcreaterole, rolbypassrls"
        " FROM pg_roles WHERE rolname = %s",
        (role,),
    )
    assert flags == (True, True, False, False, False, False)
    owned = "SELECT relname FROM pg_class JOIN pg_roles r ON r.oid = relowner WHERE rolname = %s"
    assert query(pg_kwargs, owned, (role,)) == []
    # It logs in on loopback with the generated password (never written in a config).
    login = {**pg_kwargs, "user": role, "password": os.environ["RECON_PG_DEBEZIUM_PASSWORD"]}
    with psycopg2.connect(**login) as pg, pg.cursor() as cur:
        cur.execute("SELECT has_database_privilege(current_user, current_database(), 'CREATE')")
        assert cur.fetchone() == (False,)
    pg.close()
    for name in (connectors.name, connectors.cdc):
        stored = debezium.stored_config(name)
        assert stored["database.password"] == "${env:RECON_PG_DEBEZIUM_PASSWORD}"
        assert stored["database.hostname"] == "127.0.0.1"


@pytest.mark.serial
def test_a_killed_worker_and_a_paused_connector_are_judged_as_the_truth_says(
    connectors: debezium.Connectors, runs: list[str], tmp_path: Path, pg_kwargs: dict[str, Any]
) -> None:
    tag = uuid.uuid4().hex[:6]
    runs.append(tag)
    gate = HoldGate(timeout=300)
    done: dict[str, Any] = {}

    def work() -> None:
        try:
            done["truth"] = run_scenario(
                SCENARIO, messages=MESSAGES, partitions=PARTITIONS, seed=SEED, run_tag=tag,
                progress=False, hold=gate,
            )  # fmt: skip
        except BaseException as exc:  # handed to the test's thread
            done["error"] = exc
            gate.held.set()

    job = threading.Thread(target=work, daemon=True)
    job.start()
    try:
        assert gate.held.wait(300), "the scenario never paused its connector"
        assert "error" not in done, done.get("error")
        # Meanwhile: the connector paused, rows keep coming, the consumer has read nothing. A
        # pipeline whose settle_seconds covers the relay's pauses says none of them unpublished:
        # what reached the topic is pending, the rest waits to settle.
        partial = ScenarioResult(
            scenario_run=f"{SCENARIO}-{tag}", scenario=SCENARIO, topic=f"wl-{SCENARIO}-{tag}",
            sink_table=f"public.wl_{SCENARIO}_{tag}", consumer_group=f"wl-{SCENARIO}-{tag}",
            counts={}, summary="",
        )  # fmt: skip
        table = f"public.wl_{SCENARIO}_{tag}_outbox"
        _, meanwhile = _reconcile(partial, tmp_path, TABLE_SOURCE.format(table=table), 600)
        assert set(meanwhile) == {"pending"}, meanwhile
    finally:
        gate.release()
        job.join(300)
    assert "error" not in done, done.get("error")
    truth: ScenarioResult = done["truth"]
    assert truth.faults["worker_kill_seconds"] > 0
    # The restarted worker published again what it had not flushed: twice in the topic, once
    # in the sink (the consumer dedupes), nothing unpublished once it caught up.
    assert truth.topic_duplicates > 0, truth.summary
    assert truth.unpublished_ids == [], truth.summary
    assert {v for v, n in truth.counts.items() if n} == {"delivered"}, truth.summary
    actual, counts = _reconcile(truth, tmp_path, TABLE_SOURCE.format(table=truth.source_table))
    assert_same_verdicts(expected_verdicts(pg_kwargs, truth.scenario_run), actual)
    assert counts == {v: n for v, n in truth.counts.items() if n}


def test_deleted_outbox_rows_are_counted_from_the_change_topic_and_skipped_ones_unpublished(
    connectors: debezium.Connectors,
    runs: list[str],
    tmp_path: Path,
    pg_kwargs: dict[str, Any],
    kafka_config: dict[str, str],
) -> None:
    tag = uuid.uuid4().hex[:6]
    runs.append(tag)
    truth = run_scenario(
        SCENARIO, messages=MESSAGES, partitions=PARTITIONS, seed=SEED, run_tag=tag,
        progress=False, worker_kill=0, pause=0, skipped=6, delete_rows=1,
    )  # fmt: skip
    assert query(pg_kwargs, f"SELECT count(*) FROM {truth.source_table}") == [(0,)]
    skipped = truth.faults["skipped_ids"]
    assert len(skipped) == 6
    assert truth.unpublished_ids == sorted(skipped)
    changes = truth.faults["change_topic"]
    created = [change_event_id(r.value) for r in read_topic(kafka_config, changes)]
    assert sorted(created) == sorted(f"{tag}-{i:06d}" for i in range(MESSAGES))
    actual, counts = _reconcile(truth, tmp_path, TOPIC_SOURCE.format(topic=changes))
    assert_same_verdicts(expected_verdicts(pg_kwargs, truth.scenario_run), actual)
    assert counts == {"delivered": MESSAGES - 6, "unpublished": 6}
