"""Every workload scenario through `recon run`'s engines: each verdict equals the ground truth,
message by message; the same run id re-run gives identical rows.

Both engines: ``spark`` and ``local`` (the window read by the Kafka reader processes, the sink
copied out with ``COPY``, the verdicts judged and the results written by DuckDB; the results are
read back with Spark, as the validation step reads them, which is part of the test).

Each scenario's workload runs once (``workload``, module scope) and both engines reconcile what
it left: a pipeline of its own per engine (its own name, so its own watermarks, ledger and
results) over the same topic, consumer group and sink table. Reconciling only reads them (the
readers use a group id of their own and commit nothing), so each engine meets exactly the data
the ground truth describes, as a fresh workload run of its own would give it.
"""

from __future__ import annotations

import json
import re
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.kafka_read import read_topic
from fixtures.pipelines import WORKLOAD_PIPELINE
from fixtures.verdicts import actual_verdicts, assert_local_layout, expected_verdicts
from fixtures.workload_runs import query

from recon.config import PipelineConfig, load_pipelines
from recon.ledger.versions import local_path
from recon.read.sink_copy import is_copied
from recon.run.outcome import RunSummary
from recon.run.steps import (
    reconcile_run,
    results_db,
    run_pipeline,
    snapshot_offsets,
    snapshot_topic,
    validate_step,
    window_path,
)
from recon.store import forget_pipeline
from recon_workload import SCENARIOS, ScenarioResult, remove_run, run_scenario

pytestmark = pytest.mark.integration

SEMANTICS = {
    "at_most_once": ("at_most_once", False),
    "at_least_once": ("at_least_once", False),
    "exactly_once_idempotent_consumer": ("exactly_once", True),
    "exactly_once_transactional_sink": ("exactly_once", True),
    "exactly_once_read_process_write": ("exactly_once", True),
    "broken_exactly_once": ("exactly_once", True),
    "consumer_group_rewind": ("at_least_once", False),
    "bad_records": ("exactly_once", False),
    "concurrent_writers": ("at_least_once", True),
    # three-way (issue 20): the pipeline's source is the scenario's outbox table
    "outbox_fire_and_forget": ("at_least_once", False),
    "outbox_relay": ("exactly_once", True),
    # issue 70: a compacted topic after the log cleaner ran (older versions unverifiable)
    "compacted_changelog": ("at_least_once", True),
    # issue 72: a retry-topic chain (diverted, or delivered on retry); a dead-letter topic and
    # a filter (excluded) are tests/integration/test_dead_letters.py's, the fan-out the demo's
    "retry_topic_consumer": ("at_least_once", True),
}
#: The acks=0 relay loses what it sends while the broker stops (about one record in a thousand
#: messages, often none in a hundred): enough messages that some are unpublished.
MESSAGES = {"outbox_fire_and_forget": 1000}
#: The scenarios whose Spark run is re-run with the same run id (every one is on the local engine).
RERUN_ON_SPARK = ("broken_exactly_once", "bad_records")
#: The scenarios judged by both engines; the others by the local engine only. Both engines run
#: the same rule files (test_engine_parity.py compares every column of their results over the
#: named fixtures); what differs is how each reads Kafka and the sink, and these scenarios
#: cover those reads: delivered and duplicated rows, lost records, aborted transactions (offset
#: gaps, read_committed), unparseable records and sink rows without an id, and a source table
#: (``outbox_relay``; unpublished messages on both engines: test_source_verdicts.py, and the unit
#: tier's parity tests; ``outbox_fire_and_forget`` on Spark cost 87-92 s of the serial tests, the
#: critical side of `make test`'s first phase).
#: A Spark run of a scenario costs 15-45 s of the suite's 30-minute budget.
BOTH_ENGINES = ("at_least_once", "broken_exactly_once", "bad_records", "outbox_relay")
#: The Spark engine reads a window this small on the driver, with the local engine's reader
#: (``recon.engines.spark_snapshot.reads_on_driver``), and the sink rows from the copy step 2
#: made (``recon.read.sink_copy``); ``spark-tasks`` runs it with ``RECON_SPARK_DRIVER_READ=0``:
#: Spark's Kafka source, as a large window is read, and the sink rows over JDBC, as where the
#: data directory is not on the driver's machine. Each reader meets bad records; Spark's own,
#: the aborted transactions and a source beside it.
SPARK_READERS = {
    "spark": ("at_least_once", "bad_records"),
    "spark-tasks": ("broken_exactly_once", "bad_records", "outbox_relay"),
}
#: The workloads that bounce the broker every test shares.
BOUNCES = ("at_most_once", "outbox_fire_and_forget")


#: The pipeline's source: the outbox a scenario's relay publishes from.
SOURCE = """    source:
      connection: postgres_sink
      table: {table}
      message_id_column: message_id
      time_column: created_at
      key_column: seq
"""


def _declared(scenario: str, topic: str) -> str:
    """What the pipeline of a consumer that leaves records out on purpose declares (issue 72)."""
    if scenario == "retry_topic_consumer":
        from recon_workload.diverting import retry_topics

        return f"    diverted:\n      topics: [{', '.join(retry_topics(topic))}]\n"
    return ""


def _discrepancy_rows(pipeline: str, run_id: str) -> list[tuple[Any, ...]]:
    with results_db() as pg, pg.cursor() as cur:
        cur.execute(
            "SELECT verdict, message_id, topic, partition, offsets, sink_keys, sink_count, "
            "topic_duplicate FROM recon.discrepancies WHERE pipeline = %s AND run_id = %s "
            "ORDER BY verdict, message_id, partition, offsets, sink_keys",
            (pipeline, run_id),
        )
        return cur.fetchall()


def _window_reader(data_dir: str, name: str) -> str:
    """Which reader wrote the run's committed part: ``spark`` (the driver's reader writes one
    ``part-0.parquet``) or ``spark-tasks`` (Spark's writer: ``part-<task>-<uuid>...parquet``)."""
    part = Path(window_path(data_dir, name, "run-1", "committed"))
    files = sorted(p.name for p in part.glob("part-*.parquet"))
    if files == ["part-0.parquet"]:
        return "spark"
    assert files and all(re.fullmatch(r"part-\d{5}-.+\.snappy\.parquet", f) for f in files), files
    return "spark-tasks"


def _run(cfg: PipelineConfig, spark: Any, data_dir: str, *, sink_over_jdbc: bool) -> RunSummary:
    """Run ``run-1`` as ``recon run`` does; with ``sink_over_jdbc``, step by step, without the
    copy of the sink rows step 2 made: step 3 then reads them over JDBC, as it does where the
    data directory is not on the driver's machine (no such file system here) or for a window
    read before step 2 copied them."""
    if not sink_over_jdbc:
        return run_pipeline(cfg, "run-1", spark, data_dir=data_dir)
    snapshot_offsets(cfg, "run-1")
    snapshot_topic(cfg, "run-1", spark, data_dir=data_dir)
    shutil.rmtree(local_path(window_path(data_dir, cfg.name, "run-1", "sink")))
    summary = reconcile_run(cfg, "run-1", spark, data_dir=data_dir)
    validate_step(cfg, "run-1", spark, data_dir=data_dir)
    return summary


@pytest.fixture(scope="module")
def workload() -> Iterator[Callable[[str], ScenarioResult]]:
    """The scenario's workload run, made on first use and shared by both engines' tests; every
    run is removed when the module ends. A failed run is not kept: the next test runs it again."""
    done: dict[str, ScenarioResult] = {}
    made: list[tuple[str, str]] = []  # (scenario, run tag) of every run started, to remove

    def get(scenario: str) -> ScenarioResult:
        if scenario not in done:
            tag = uuid.uuid4().hex[:6]
            made.append((scenario, tag))
            done[scenario] = run_scenario(scenario, messages=MESSAGES.get(scenario, 120),
                                          partitions=3, seed=11, run_tag=tag,
                                          progress=False)  # fmt: skip
        return done[scenario]

    yield get
    for scenario, tag in made:
        remove_run(scenario, tag)


#: The at_most_once workload bounces the broker every test shares (kill and restart): its tests
#: run with the serial ones, alone (scripts/test.sh); beside another test they break its Kafka
#: clients mid-run (a workload consumer of the other worker died of it).
# Scenario outer, engine inner: both engines of a scenario run one after the other, on the
# workload run the first of them made.
SCENARIO_ENGINE_PARAMS = [
    pytest.param(scenario, engine, id=f"{scenario}-{engine}",
                 marks=[pytest.mark.serial] if scenario in BOUNCES else [])
    for scenario in SEMANTICS
    for engine in ("spark", "spark-tasks", "local")
    if engine == "local" or scenario in SPARK_READERS[engine]
]  # fmt: skip
assert {s for scenarios in SPARK_READERS.values() for s in scenarios} == set(BOTH_ENGINES)


@pytest.mark.parametrize(("scenario", "engine"), SCENARIO_ENGINE_PARAMS)
def test_every_verdict_equals_the_ground_truth(
    scenario: str,
    engine: str,
    workload: Callable[[str], ScenarioResult],
    spark: Any,
    pg_kwargs: dict[str, Any],
    kafka_config: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert scenario in SCENARIOS
    truth = workload(scenario)
    tag = uuid.uuid4().hex[:6]
    semantics, idempotent = SEMANTICS[scenario]
    name = f"wl_{engine.replace('-', '_')}_{scenario}_{tag}"
    reader = engine
    if engine == "spark-tasks":
        monkeypatch.setenv("RECON_SPARK_DRIVER_READ", "0")
        engine = "spark"
    yaml_path = tmp_path / "pipelines.yaml"
    yaml_path.write_text(
        WORKLOAD_PIPELINE.format(
            name=name, semantics=semantics, topic=truth.topic, group=truth.consumer_group,
            table=truth.sink_table, idempotent=json.dumps(idempotent), engine=engine,
        )
    )  # fmt: skip
    yaml_path.write_text(yaml_path.read_text() + _declared(scenario, truth.topic))
    if truth.source_table is not None:
        yaml_path.write_text(yaml_path.read_text() + SOURCE.format(table=truth.source_table))
        # The ground truth itself: unpublished is what the outbox holds and the topic lacks.
        outbox = {m for (m,) in query(pg_kwargs, f"SELECT message_id FROM {truth.source_table}")}
        committed = {r.message_id for r in read_topic(kafka_config, truth.topic)}
        assert truth.unpublished_ids == sorted(outbox - committed)
        assert truth.unpublished_ids or scenario == "outbox_relay", "the relay lost nothing"
    cfg = load_pipelines(yaml_path)[name]
    assert cfg.engine == engine
    data_dir = str(tmp_path / "data")
    try:
        summary = _run(cfg, spark, data_dir, sink_over_jdbc=reader == "spark-tasks")
        if engine == "local":
            assert_local_layout(data_dir, name, "run-1")
        else:
            assert _window_reader(data_dir, name) == reader
            copied = is_copied(local_path(window_path(data_dir, name, "run-1", "sink")))
            assert copied == (reader == "spark")
        expected = expected_verdicts(pg_kwargs, truth.scenario_run)
        actual, invalid_sink_positions = actual_verdicts(
            spark, data_dir, name, "run-1", pg_kwargs, truth.sink_table
        )
        # Each sink row without an id comes from a record the ledger holds as invalid.
        for position in invalid_sink_positions:
            assert expected.get(position, ("?",))[0] == "invalid", position
        wrong = {
            k: (expected.get(k), actual.get(k))
            for k in set(expected) | set(actual)
            if expected.get(k) != actual.get(k)
        }
        assert not wrong, (
            f"{scenario}: {len(wrong)} verdicts differ from the ground truth "
            f"(key: (expected, actual)): {dict(sorted(wrong.items())[:10])}"
        )
        expected_counts = {v: n for v, n in truth.counts.items() if n}
        actual_counts = {v: n for v, n in summary.counts.items() if n and v != "topic_duplicate"}
        if invalid_sink_positions:
            actual_counts["invalid"] -= len(invalid_sink_positions)
        assert actual_counts == expected_counts

        # The same run id again: the same snapshot, the same verdicts, the same rows. Both
        # engines commit through one driver; Spark's own write path is re-run on the scenarios
        # with the most kinds of rows (a re-run costs a Spark run, 10-15 s, on every scenario).
        if engine == "spark" and scenario not in RERUN_ON_SPARK:
            return
        before = _discrepancy_rows(name, "run-1")
        again = _run(cfg, spark, data_dir, sink_over_jdbc=reader == "spark-tasks")
        assert again.counts == summary.counts
        assert _discrepancy_rows(name, "run-1") == before
    finally:
        with results_db() as pg:
            forget_pipeline(pg, name)
