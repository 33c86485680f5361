"""The verdict ``late`` and the latency percentiles on the real stack (issue 19): the slow
consumer's workload run, reconciled by each engine with the sink's time column and the bound the
scenario is designed around; every verdict equals the ground truth message by message, and the
percentiles in ``recon.latency`` equal the ones this test computes itself from the records'
Kafka timestamps and the sink rows' times."""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from everyday_kit import commit_group, produce, same, write_rows
from fixtures.kafka_read import read_topic
from fixtures.pipelines import LATENCY_PIPELINE
from fixtures.verdicts import actual_verdicts, assert_same_verdicts, expected_verdicts

from recon.config import load_pipelines
from recon.run.steps import results_db, run_pipeline
from recon.store import forget_pipeline
from recon_workload import ScenarioResult, remove_run, run_scenario

pytestmark = pytest.mark.integration

SCENARIO = "slow_consumer"


@pytest.fixture(scope="module")
def truth() -> Iterator[ScenarioResult]:
    tag = uuid.uuid4().hex[:6]
    result = run_scenario(SCENARIO, messages=120, partitions=3, seed=11, run_tag=tag,
                          progress=False)  # fmt: skip
    try:
        assert result.late_ids, result.summary  # else nothing is late: the test would be empty
        assert result.late_bound_seconds is not None
        yield result
    finally:
        remove_run(SCENARIO, tag)


def _kafka_times(kafka_config: dict[str, str], topic: str) -> dict[str, tuple[int, int]]:
    """messageId -> (partition, Kafka timestamp in ms) of every committed record of the topic."""
    return {
        r.message_id: (r.partition, r.timestamp_ms)
        for r in read_topic(kafka_config, topic)
        if r.message_id is not None
    }


def _nearest_rank(values: list[int], share: int) -> int:
    """The smallest value with at least ``share`` % of the values at or below it."""
    ordered = sorted(values)
    return ordered[math.ceil(len(ordered) * share / 100) - 1]


def _expected_latency(
    kafka_config: dict[str, str], pg_kwargs: dict[str, Any], truth: ScenarioResult
) -> dict[int, tuple[int, int, int, int, int, int, int]]:
    """Per partition (-1: the whole run): messages, negative, min, p50, p95, p99, max (ms)."""
    stamps = _kafka_times(kafka_config, truth.topic)
    with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(
            f"SELECT message_id, (extract(epoch FROM {truth.time_column}) * 1000000)::bigint "
            f"FROM {truth.sink_table}"
        )
        written = cur.fetchall()
    by_partition: dict[int, list[int]] = {-1: []}
    for mid, written_us in written:
        partition, stamp_ms = stamps[mid]
        latency = written_us // 1000 - stamp_ms  # both engines truncate to whole milliseconds
        by_partition.setdefault(partition, []).append(latency)
        by_partition[-1].append(latency)
    return {
        p: (len(v), sum(1 for x in v if x < 0), min(v), _nearest_rank(v, 50),
            _nearest_rank(v, 95), _nearest_rank(v, 99), max(v))
        for p, v in by_partition.items()
    }  # fmt: skip


@pytest.mark.parametrize("engine", ["spark", "local"])
def test_late_verdicts_and_percentiles_equal_the_ground_truth(
    engine: str,
    truth: ScenarioResult,
    spark: Any,
    kafka_config: dict[str, str],
    pg_kwargs: dict[str, Any],
    tmp_path: Path,
) -> None:
    name = f"lat_{engine}_{uuid.uuid4().hex[:6]}"
    yaml_path = tmp_path / "pipelines.yaml"
    yaml_path.write_text(
        LATENCY_PIPELINE.format(
            name=name, engine=engine, semantics="at_least_once", idempotent="true",
            topic=truth.topic, group=truth.consumer_group,
            table=truth.sink_table, time_column=truth.time_column,
            max_seconds=truth.late_bound_seconds,
        )
    )  # fmt: skip
    cfg = load_pipelines(yaml_path)[name]
    data_dir = str(tmp_path / "data")
    try:
        summary = run_pipeline(cfg, "run-1", spark, data_dir=data_dir)
        expected = expected_verdicts(pg_kwargs, truth.scenario_run)
        actual, _ = actual_verdicts(spark, data_dir, name, "run-1", pg_kwargs, truth.sink_table)
        assert_same_verdicts(expected, actual)
        late = sorted(k for k, (verdict, _) in actual.items() if verdict == "late")
        assert late == truth.late_ids
        assert summary.counts["late"] == len(truth.late_ids)

        with results_db() as pg, pg.cursor() as cur:
            cur.execute(
                "SELECT partition, messages, negative, min_ms, p50_ms, p95_ms, p99_ms, max_ms, "
                "bound_ms, timestamp_type FROM recon.latency WHERE pipeline = %s AND run_id = %s",
                (name, "run-1"),
            )
            stored = {row[0]: row[1:] for row in cur.fetchall()}
        bound_ms = round(truth.late_bound_seconds * 1000)
        computed = _expected_latency(kafka_config, pg_kwargs, truth)
        # The workload's producer leaves the topic's default: the producer's CreateTime.
        want = {p: (*figures, bound_ms, "CreateTime") for p, figures in computed.items()}
        assert stored == want
        assert summary.latency is not None and summary.latency["overall"]["p99_ms"] == want[-1][5]
    finally:
        with results_db() as pg:
            forget_pipeline(pg, name)


@pytest.mark.parametrize("engine", ["spark", "local"])
def test_a_row_arriving_runs_after_its_record_is_late_by_its_latency(
    engine: str,
    kit_setup: Callable[..., Any],
    kafka_config: dict[str, str],
    pg_kwargs: dict[str, Any],
    spark: Any,
) -> None:
    """Run 1 judges m1 lost (no sink row yet) and its ledger entry keeps the record's time; m1's
    row arrives past the bound, and run 2 measures its latency from that time: late, not
    delivered. The latency is the one this test computes from Kafka and the sink."""
    s = kit_setup(engine, "xlat")
    s.yaml_path.write_text(
        LATENCY_PIPELINE.format(
            name=s.name, engine=engine, semantics="exactly_once", idempotent="false",
            topic=s.topic, group=s.group, table=s.table, time_column="ingested_at",
            max_seconds=2,
        )
    )  # fmt: skip
    s.cfg = load_pipelines(s.yaml_path)[s.name]
    where = produce(kafka_config, s.topic, ["m1", "m2", "m3"])
    write_rows(pg_kwargs, s.table, ["m2", "m3"], where)
    commit_group(kafka_config, s.group, s.topic)
    s.run(spark, "run-1")
    same({"m1": "lost", "m2": "delivered", "m3": "delivered"}, s.verdicts(spark, "run-1"),
         "run 1 (m1's row not written yet)")  # fmt: skip

    time.sleep(2.5)  # m1's row comes past the 2 s bound
    write_rows(pg_kwargs, s.table, ["m1"], where)
    s.run(spark, "run-2")
    same({"m1": "late"}, s.verdicts(spark, "run-2"), "run 2 (m1's row written after the bound)")
    (row,) = [r for r in s.result_rows(spark, "run-2") if r.message_id == "m1"]
    with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(
            f"SELECT (extract(epoch FROM ingested_at) * 1000000)::bigint FROM {s.table} "
            "WHERE message_id = 'm1'"
        )
        ((written_us,),) = cur.fetchall()
    pg.close()
    stamp_ms = _kafka_times(kafka_config, s.topic)["m1"][1]
    assert row.latency_ms == written_us // 1000 - stamp_ms
    assert row.latency_ms > 2000
