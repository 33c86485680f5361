"""Every workload scenario through `recon run`'s engines: each verdict equals the ground truth,
message by message; the same run id re-run gives identical rows.

Both engines: ``spark`` and ``local`` (the window read by the Kafka reader processes, the sink
copied out with ``COPY``, the verdicts judged and the results written by DuckDB; the results are
read back with Spark, as the validation step reads them, which is part of the test)."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import psycopg2
import pytest

from recon.config import load_pipelines
from recon.engine import results_db, results_path, run_pipeline, window_path
from recon.store import forget_pipeline
from recon_workload import SCENARIOS, remove_run, run_scenario

pytestmark = pytest.mark.integration

PIPELINE_YAML = """
pipelines:
  {name}:
    engine: {engine}
    semantics: {semantics}
    schedule: null
    settle_seconds: 0
    kafka:
      connection: kafka_default
      topic: {topic}
      consumer_group: {group}
      message_id: {{header: message_id}}
    sink:
      connection: postgres_sink
      table: {table}
      message_id_column: message_id
      ingest_seq_column: id
    idempotent_producer: {idempotent}
"""

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
}


def _expected(pg_kwargs: dict[str, Any], scenario_run: str) -> dict[str, tuple[str, bool]]:
    """The ledger's truth keyed like the product's rows: messageId, or topic:partition:offset."""
    with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(
            "SELECT ledger_key, message_id, expected_verdict, topic_duplicate "
            "FROM workload.ledger WHERE scenario_run = %s AND expected_verdict IS NOT NULL",
            (scenario_run,),
        )
        return {(mid or key): (verdict, dup) for key, mid, verdict, dup in cur.fetchall()}


def _actual(
    spark: Any, data_dir: str, pipeline: str, run_id: str, pg_kwargs: dict[str, Any], table: str
) -> tuple[dict[str, tuple[str, bool]], set[str]]:
    """The product's verdicts keyed like the ledger, and the positions of the records behind
    invalid sink rows (the sink row is quarantined on its own, beside its invalid record)."""
    rows = spark.read.parquet(results_path(data_dir, pipeline, run_id)).collect()
    got: dict[str, tuple[str, bool]] = {}
    invalid_sink_keys: list[str] = []
    for r in rows:
        key = r.message_id
        if key is None and r.verdict == "invalid" and not r.offsets:
            invalid_sink_keys.extend(r.sink_keys)
            continue
        if key is None and r.verdict == "invalid":
            key = f"{r.topic}:{r.partition}:{r.offsets[0]}"
        assert key is not None, f"a result row without a key: {r}"
        assert key not in got, f"two verdicts for {key}: {got[key]} and {r.verdict}"
        got[key] = (r.verdict, bool(r.topic_duplicate))
    positions: set[str] = set()
    if invalid_sink_keys:
        with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
            cur.execute(
                f"SELECT kafka_topic, kafka_partition, kafka_offset FROM {table} "
                "WHERE id = ANY(%s)",
                ([int(k) for k in invalid_sink_keys],),
            )
            positions = {f"{t}:{p}:{o}" for t, p, o in cur.fetchall()}
        assert len(positions) == len(invalid_sink_keys)
    return got, positions


def _discrepancy_rows(pipeline: str, run_id: str) -> list[tuple[Any, ...]]:
    with results_db() as pg, pg.cursor() as cur:
        cur.execute(
            "SELECT verdict, message_id, topic, partition, offsets, sink_keys, sink_count, "
            "topic_duplicate FROM recon.discrepancies WHERE pipeline = %s AND run_id = %s "
            "ORDER BY verdict, message_id, partition, offsets, sink_keys",
            (pipeline, run_id),
        )
        return cur.fetchall()


def assert_local_layout(data_dir: str, pipeline: str, run_id: str) -> None:
    """The run's window directory is the local engine's: four parts made visible at once."""
    run_dir = os.path.dirname(window_path(data_dir, pipeline, run_id, "committed"))
    for part in ("committed", "pending", "inflight", "sink"):
        assert os.path.isdir(os.path.join(run_dir, part)), f"{run_dir}: no {part}/"
    assert os.path.exists(os.path.join(run_dir, "_SUCCESS")), f"{run_dir}: no _SUCCESS"


@pytest.mark.parametrize("engine", ["spark", "local"])
@pytest.mark.parametrize("scenario", list(SEMANTICS))
def test_every_verdict_equals_the_ground_truth(
    scenario: str, engine: str, spark: Any, pg_kwargs: dict[str, Any], tmp_path: Path
) -> None:
    assert scenario in SCENARIOS
    tag = uuid.uuid4().hex[:6]
    truth = run_scenario(scenario, messages=120, partitions=3, seed=11, run_tag=tag, progress=False)
    semantics, idempotent = SEMANTICS[scenario]
    name = f"wl_{engine}_{scenario}_{tag}"
    yaml_path = tmp_path / "pipelines.yaml"
    yaml_path.write_text(
        PIPELINE_YAML.format(
            name=name, semantics=semantics, topic=truth.topic, group=truth.consumer_group,
            table=truth.sink_table, idempotent=json.dumps(idempotent), engine=engine,
        )
    )  # fmt: skip
    cfg = load_pipelines(yaml_path)[name]
    assert cfg.engine == engine
    data_dir = str(tmp_path / "data")
    try:
        summary = run_pipeline(cfg, "run-1", spark, data_dir=data_dir)
        if engine == "local":
            assert_local_layout(data_dir, name, "run-1")
        expected = _expected(pg_kwargs, truth.scenario_run)
        actual, invalid_sink_positions = _actual(
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

        # The same run id again: the same snapshot, the same verdicts, the same rows.
        before = _discrepancy_rows(name, "run-1")
        again = run_pipeline(cfg, "run-1", spark, data_dir=data_dir)
        assert again.counts == summary.counts
        assert _discrepancy_rows(name, "run-1") == before
    finally:
        remove_run(scenario, tag)
        with results_db() as pg:
            forget_pipeline(pg, name)
