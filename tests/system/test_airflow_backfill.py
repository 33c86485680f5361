"""Airflow's backfill over past logical dates (issue 8's fault matrix, Airflow rows), under the real
scheduler: runs go one at a time, each committing its own window, the windows tile the topic and
nothing is counted twice.
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime

import dagrun_kit as kit
import pytest
from fault_runs import group_offsets
from fixtures.pipelines import DAG_DIR_PIPELINE

from recon.run.steps import results_db
from recon.store import forget_pipeline
from recon_workload import remove_run, run_scenario
from recon_workload.kafka_io import alter_offsets, base_config
from recon_workload.names import RunNames

pytestmark = pytest.mark.system

BACKFILL_SCENARIO = "exactly_once_idempotent_consumer"
# Fires only on 29 February: never between the DAG's start_date (2026-01-01) and now, so the
# scheduler makes no run of its own; a backfill over 2019-2024 makes exactly two.
LEAP_DAYS = '"0 0 29 2 *"'
BACKFILL_DATES = ("2020-02-29", "2024-02-29")
# What is tested is Airflow's backfill (one run at a time, each with its own logical date) and the
# windows it commits, not an engine: the local engine's steps run in their tasks' processes,
# where the Spark engine's three spark-submit steps per run cost about a minute of JVM starts.
# The Spark steps under the scheduler are the retried run's (test_airflow_faults.py).
BACKFILL_ENGINE = "local"


def _wait_snapshot(pipeline: str, timeout: float = 420) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = kit.query(
            "SELECT run_id FROM recon.runs WHERE pipeline = %s AND snapshot_at IS NOT NULL",
            pipeline,
        )
        if rows:
            assert len(rows) == 1, f"two backfill runs took snapshots at once: {rows}"
            return str(rows[0][0])
        time.sleep(0.5)
    raise AssertionError(f"no backfill run of {pipeline} took its snapshot within {timeout:.0f} s")


def test_backfill_runs_one_at_a_time_each_committing_its_window(airflow_url: str) -> None:
    tag = uuid.uuid4().hex[:6]
    names = RunNames(BACKFILL_SCENARIO, tag)
    pipeline = f"faults_backfill_{tag}"
    dag_id = f"recon_{pipeline}"
    text = DAG_DIR_PIPELINE.format(
        name=pipeline, engine=BACKFILL_ENGINE, semantics="exactly_once", schedule=LEAP_DAYS,
        topic=names.topic(), group=names.group(), table=names.qualified_table, tolerances="{}",
        retries=0,
    )  # fmt: skip
    airflow = kit.Airflow(airflow_url)
    try:
        with kit.declared(pipeline, text):
            truth = run_scenario(BACKFILL_SCENARIO, messages=150, run_tag=tag, progress=False)
            assert kit.judged(truth.counts) == {"delivered": 150}, truth.summary
            airflow.wait_for_dag(dag_id)
            # The first backfill run sees the group half-way: it judges the first half and holds
            # the rest (sink rows already written) as pending; the second run judges the rest.
            ends = group_offsets(truth)
            half = {p: end // 2 for p, end in ends.items()}
            conf = base_config()
            alter_offsets(
                conf, truth.consumer_group, {(truth.topic, p): o for p, o in half.items()}
            )

            backfill = airflow.call(
                "POST", "/backfills",
                json={"dag_id": dag_id, "from_date": "2019-01-01T00:00:00Z",
                      "to_date": "2025-01-01T00:00:00Z", "max_active_runs": 1,
                      "reprocess_behavior": "none"},
            )  # fmt: skip
            first = _wait_snapshot(pipeline)
            alter_offsets(
                conf, truth.consumer_group, {(truth.topic, p): o for p, o in ends.items()}
            )
            dag_runs = airflow.runs(dag_id)
            assert [d["logical_date"][:10] for d in dag_runs] == list(BACKFILL_DATES)
            assert all(d["run_type"] == "backfill" for d in dag_runs)
            assert dag_runs[0]["dag_run_id"] == first, (
                "the backfill did not start with its oldest date"
            )
            done = [airflow.wait_run(dag_id, d["dag_run_id"], timeout=600) for d in dag_runs]
            assert [d["state"] for d in done] == ["success", "success"], (
                f"backfill {backfill['id']}: see {kit.task_log_dir(dag_id, first)}"
            )

            # One at a time: the second run started after the first ended.
            started = datetime.fromisoformat(done[1]["start_date"])
            assert started >= datetime.fromisoformat(done[0]["end_date"])
            second = done[1]["dag_run_id"]
            runs = kit.runs(pipeline)
            assert set(runs) == {first, second}
            assert runs[second]["base_run_id"] == first
            assert all(r["status"] == "passed" for r in runs.values())

            # Each committed exactly its window, and the windows tile the topic.
            w1, w2 = kit.windows(pipeline, first), kit.windows(pipeline, second)
            assert {p: w[1] for p, w in w1.items()} == half
            assert {p: (w[0], w[1]) for p, w in w2.items()} == {p: (half[p], ends[p]) for p in ends}
            assert kit.watermarks(pipeline) == {p: (end, second) for p, end in ends.items()}

            c1, c2 = runs[first]["counts"], runs[second]["counts"]
            assert c1["delivered"] > 0 and c2["delivered"] > 0
            # What the first held as pending is exactly what the second judged: nothing twice.
            assert c1.get("pending", 0) == c2["delivered"]
            assert c1["delivered"] + c2["delivered"] == truth.counts["delivered"]
            assert kit.judged(c2) == {"delivered": c2["delivered"]}
    finally:
        remove_run(BACKFILL_SCENARIO, tag)
        with results_db() as pg:
            forget_pipeline(pg, pipeline)
