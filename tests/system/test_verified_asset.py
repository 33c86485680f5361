"""Verified data as an Airflow Asset, under the running scheduler (issue 76, item 3): a run that
keeps its contract emits the sink's Asset with the verified extent, and the downstream DAG
scheduled on it (``dags/recon_verified_report.py``) runs and receives the watermark; a run that
breaks its contract emits nothing, and the downstream DAG does not run.

One small pipeline on the local engine (no JVM), two runs of it by ``airflow dags test`` (the
reconciliation tasks run in the test's process, on this checkout's code); the downstream DAG is
run by the stack's scheduler, as an Asset event makes it.
"""

from __future__ import annotations

import subprocess
import time
import uuid
from datetime import datetime, timedelta

import dagrun_kit as kit
import psycopg2
import pytest
from fault_runs import group_offsets
from fixtures.pipelines import DAG_DIR_PIPELINE
from psycopg2 import sql

from recon.config.connections import postgres_connection
from recon.run.steps import results_db
from recon.store import forget_pipeline
from recon_airflow.lineage import sink_asset_uri
from recon_workload import remove_run, run_scenario
from recon_workload.names import RunNames

pytestmark = pytest.mark.system

SCENARIO = "exactly_once_idempotent_consumer"
MESSAGES = 60


def _report_runs(airflow: kit.Airflow, dag_id: str, want: int, timeout: float = 120) -> list[dict]:
    """The downstream DAG's runs once ``want`` of them have finished."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = airflow.runs(dag_id)
        if len(runs) >= want and all(r["state"] in kit.TERMINAL for r in runs):
            return runs
        time.sleep(2)
    raise AssertionError(f"{dag_id}: {want} finished run(s) expected, have {airflow.runs(dag_id)}")


def _dags_test(pipeline: str, state: str) -> str:
    """One run of the pipeline's reconciliation DAG by `airflow dags test` (its tasks in this
    process, on this checkout's code); returns its run id once it ended in ``state``."""
    done = subprocess.run(
        ["airflow", "dags", "test", f"recon_{pipeline}"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert f"state={state}" in output, output[-3000:]
    newest = kit.query(
        "SELECT run_id FROM recon.runs WHERE pipeline = %s ORDER BY started_at DESC LIMIT 1",
        pipeline,
    )
    return str(newest[0][0])


def _asset_events(airflow: kit.Airflow, uri: str) -> list[dict]:
    assets = airflow.call("GET", "/assets", params={"uri_pattern": uri})["assets"]
    mine = [a for a in assets if a["uri"] == uri]
    assert len(mine) == 1, assets
    found = airflow.call("GET", "/assets/events", params={"asset_id": mine[0]["id"]})
    return list(found["asset_events"])


def test_downstream_dag_runs_after_a_passed_run_and_not_after_a_failed_one(
    airflow_url: str,
) -> None:
    tag = uuid.uuid4().hex[:6]
    names = RunNames(SCENARIO, tag)
    pipeline = f"verified_asset_{tag}"
    dag_id, report_id = f"recon_{pipeline}", f"verified_report_{pipeline}"
    text = DAG_DIR_PIPELINE.format(
        name=pipeline, engine="local", semantics="exactly_once", schedule="null",
        topic=names.topic(), group=names.group(), table=names.qualified_table, tolerances="{}",
        retries=0,
    ).replace("tags: [system-test]", "tags: [system-test, verified-report]")  # fmt: skip
    uri = sink_asset_uri("postgres_sink", names.qualified_table)
    airflow = kit.Airflow(airflow_url)
    try:
        with kit.declared(pipeline, text):
            truth = run_scenario(SCENARIO, messages=MESSAGES, run_tag=tag, progress=False)
            assert kit.judged(truth.counts) == {"delivered": MESSAGES}, truth.summary
            airflow.wait_for_dag(dag_id)
            airflow.wait_for_dag(report_id)

            passed = _dags_test(pipeline, "success")
            reports = _report_runs(airflow, report_id, 1)
            assert len(reports) == 1, reports
            report = reports[0]
            assert report["state"] == "success", kit.task_log_dir(report_id, report["dag_run_id"])
            (xcom,) = airflow.xcoms(report_id, report["dag_run_id"])
            extra = xcom["value"]
            assert extra["pipeline"] == pipeline and extra["run_id"] == passed, extra
            ends = group_offsets(truth)
            got = {p["partition"]: p["verified_to"] for p in extra["partitions"]}
            assert got == ends, extra
            # everything was consumed and committed: verified to the snapshot's time
            snapshot_at = kit.query(
                "SELECT snapshot_at FROM recon.runs WHERE pipeline = %s AND run_id = %s",
                pipeline, passed,
            )[0][0]  # fmt: skip
            watermark = datetime.fromisoformat(extra["watermark"])  # to the millisecond
            assert snapshot_at - timedelta(milliseconds=2) < watermark < snapshot_at, extra

            # A sink row no record names: a phantom, which exactly_once forbids.
            sink = psycopg2.connect(**postgres_connection("postgres_sink").psycopg2_kwargs())
            with sink, sink.cursor() as cur:
                schema, table = names.qualified_table.split(".")
                cur.execute(
                    sql.SQL("INSERT INTO {} (message_id) VALUES (%s)").format(
                        sql.Identifier(schema, table)
                    ),
                    (f"phantom-{tag}",),
                )
            sink.close()
            failed = _dags_test(pipeline, "failed")
            assert airflow.task_instances(dag_id, failed)["alert"]["state"] == "failed"
            assert kit.runs(pipeline)[failed]["contract_passed"] is False
            events = _asset_events(airflow, uri)
            assert [e["source_run_id"] for e in events] == [passed], events
            time.sleep(5)  # the scheduler would have made a run by now (it loops each second)
            assert len(airflow.runs(report_id)) == 1
    finally:
        remove_run(SCENARIO, tag)
        with results_db() as pg:
            forget_pipeline(pg, pipeline)
