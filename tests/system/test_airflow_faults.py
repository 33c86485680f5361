"""Airflow re-running a reconciliation (issue 8's fault matrix, Airflow rows), under the real
scheduler: a task retried after its process was SIGKILLed, a finished run cleared, a backfill
over past logical dates. Each time: nothing partial is visible, watermarks advance only with their
results, verdicts equal the workload's ground truth, nothing is counted twice.
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime

import dagrun_kit as kit
import pytest
from confluent_kafka import Producer
from fault_runs import KILLED_TASK, RetriedRun, group_offsets
from fixtures.pipelines import DAG_DIR_PIPELINE

from recon.engine import results_db
from recon.store import forget_pipeline
from recon_workload import remove_run, run_scenario
from recon_workload.kafka_io import alter_offsets, base_config
from recon_workload.names import RunNames

pytestmark = pytest.mark.system

TASKS = ("snapshot_offsets", "snapshot_topic", "reconcile", "validate", "alert")


def test_retried_task_commits_once_with_the_undisturbed_verdicts(retried_run: RetriedRun) -> None:
    r = retried_run
    assert r.killed_pids, "no process was killed"
    # Between the kill and the retry: the run is not finished and nothing of it is visible.
    seen = r.after_kill
    assert seen["runs"][r.run_id]["status"] == "running"
    assert not seen["runs"][r.run_id]["counts"]
    assert (seen["watermarks"], seen["state"], seen["discrepancies"]) == ({}, [], [])
    assert seen["ti"]["try_number"] == 1

    tis = r.airflow.task_instances(r.dag_id, r.run_id)
    assert {t: ti["state"] for t, ti in tis.items()} == dict.fromkeys(TASKS, "success")
    assert tis[KILLED_TASK]["try_number"] == 2, "the killed task was not retried"

    runs = kit.runs(r.pipeline)
    assert list(runs) == [r.run_id]
    assert (runs[r.run_id]["status"], runs[r.run_id]["contract_passed"]) == ("passed", True)
    assert kit.judged(runs[r.run_id]["counts"]) == kit.judged(r.truth.counts)

    rows = kit.discrepancies(r.pipeline)
    assert len({row[2] for row in rows}) == len(rows), "a message has two discrepancy rows"
    assert sum(row[1] == "duplicated" for row in rows) == r.truth.counts["duplicated"]

    ends = group_offsets(r.truth)
    assert {p: w[1] for p, w in kit.windows(r.pipeline, r.run_id).items()} == ends
    assert kit.watermarks(r.pipeline) == {p: (end, r.run_id) for p, end in ends.items()}


def _add_committed_records(r: RetriedRun, per_partition: int = 3) -> dict[int, int]:
    """Records the consumer group has claimed since the run (offsets moved on, no sink rows):
    a run that took a new snapshot would judge them ``lost`` and move its watermarks."""
    ends = group_offsets(r.truth)
    producer = Producer(base_config())
    for partition in ends:
        for n in range(per_partition):
            producer.produce(
                r.truth.topic, value=b"{}", partition=partition,
                headers=[("message_id", f"late-{partition}-{n}".encode())],
            )  # fmt: skip
    assert producer.flush(30) == 0, "records not delivered to Kafka"
    moved = {p: end + per_partition for p, end in ends.items()}
    alter_offsets(
        base_config(), r.truth.consumer_group, {(r.truth.topic, p): o for p, o in moved.items()}
    )
    assert group_offsets(r.truth) == moved
    return moved


def test_cleared_run_replaces_its_results_and_keeps_its_window(retried_run: RetriedRun) -> None:
    r = retried_run
    before = (kit.runs(r.pipeline), kit.discrepancies(r.pipeline), kit.watermarks(r.pipeline))
    tries = {t: ti["try_number"] for t, ti in r.airflow.task_instances(r.dag_id, r.run_id).items()}
    moved = _add_committed_records(r)

    cleared = r.airflow.call(
        "POST", f"/dags/{r.dag_id}/clearTaskInstances",
        json={"dry_run": False, "dag_run_id": r.run_id, "only_failed": False,
              "reset_dag_runs": True},
    )  # fmt: skip
    assert sorted(ti["task_id"] for ti in cleared["task_instances"]) == sorted(TASKS)
    assert r.airflow.run(r.dag_id, r.run_id)["state"] in ("queued", "running")
    final = r.airflow.wait_run(r.dag_id, r.run_id, timeout=600)
    assert final["state"] == "success", f"see {kit.task_log_dir(r.dag_id, r.run_id)}"

    tis = r.airflow.task_instances(r.dag_id, r.run_id)
    assert {t: ti["try_number"] for t, ti in tis.items()} == {t: n + 1 for t, n in tries.items()}
    runs, rows, marks = (
        kit.runs(r.pipeline),
        kit.discrepancies(r.pipeline),
        kit.watermarks(r.pipeline),
    )
    assert list(runs) == [r.run_id], "the cleared run made a second recon run"
    assert runs[r.run_id]["finished_at"] > before[0][r.run_id]["finished_at"], "not re-committed"
    assert runs[r.run_id]["counts"] == before[0][r.run_id]["counts"]
    assert rows == before[1], "results were added to or changed, not replaced"
    # Same snapshot, same watermarks: the records added since are left for the next run.
    assert marks == before[2]
    assert all(marks[p][0] < moved[p] for p in moved)


BACKFILL_SCENARIO = "exactly_once_idempotent_consumer"
# Fires only on 29 February: never between the DAG's start_date (2026-01-01) and now, so the
# scheduler makes no run of its own; a backfill over 2019-2024 makes exactly two.
LEAP_DAYS = '"0 0 29 2 *"'
BACKFILL_DATES = ("2020-02-29", "2024-02-29")
# What is tested is Airflow's backfill (one run at a time, each with its own logical date) and the
# windows it commits, not an engine: the local engine's steps run in their tasks' processes,
# where the Spark engine's three spark-submit steps per run cost about a minute of JVM starts.
# The Spark steps under the scheduler are the retried run's (test_retried_task_..., above).
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


def test_nothing_listens_beyond_loopback_during_a_dag_run(retried_run: RetriedRun) -> None:
    """Every socket the project's processes listened on while the DAG run (its spark-submit
    steps, the scheduler's workers, the retry) went on was bound to loopback: no Spark UI on
    ``*:4040``, no Airflow log server on ``0.0.0.0:8793``."""
    assert retried_run.listings > 10, "the sockets were hardly listed during the run"
    assert retried_run.exposed == [], "\n".join(retried_run.exposed)
