"""A repair plan applied by its Airflow DAG (``recon_repair_<pipeline>``, issue 21) under the
running scheduler: the plan is applied, ``recon.repairs`` names the DAG run as who applied it,
and the planned rows are gone from the sink."""

from __future__ import annotations

import uuid
from pathlib import Path

import dagrun_kit as kit
import psycopg2
import pytest
from fixtures.pipelines import DAG_DIR_PIPELINE

from recon.config import load_pipelines
from recon.config.connections import postgres_connection
from recon.repair.planner import make_plan, save_plan
from recon.run.steps import results_db, run_pipeline
from recon.store import forget_pipeline
from recon_workload import remove_run, run_scenario

pytestmark = pytest.mark.system

SCENARIO = "broken_exactly_once"  # aborted transactions read uncommitted: aborted_read rows


def test_the_repair_dag_applies_a_plan_as_its_dag_run(airflow_url: str, tmp_path: Path) -> None:
    tag = uuid.uuid4().hex[:6]
    pipeline = f"repair_dag_{tag}"
    dag_id = f"recon_repair_{pipeline}"
    airflow = kit.Airflow(airflow_url)
    try:
        truth = run_scenario(SCENARIO, messages=200, run_tag=tag, progress=False)
        text = DAG_DIR_PIPELINE.format(
            name=pipeline, engine="local", semantics="exactly_once", schedule="null",
            topic=truth.topic, group=truth.consumer_group, table=truth.sink_table,
            tolerances="{}", retries=0,
        ) + "    repair: {max_delete_ratio: 1.0}\n"  # the DAG applies within its bound  # fmt: skip
        with kit.declared(pipeline, text) as path:
            cfg = load_pipelines(path)[pipeline]
            summary = run_pipeline(cfg, "sys-run-1", None, data_dir=str(tmp_path / "data"))
            assert summary.counts.get("aborted_read", 0) > 0, summary.counts
            plan = make_plan(cfg, "sys-run-1")
            save_plan(plan, str(tmp_path / "plan.json"))
            assert plan.deletes, plan.counts()

            airflow.wait_for_dag(dag_id)
            run_id = f"repair__{tag}"
            airflow.trigger(dag_id, run_id, {"plan_id": plan.plan_id})
            done = airflow.wait_run(dag_id, run_id, timeout=300)
            assert done["state"] == "success", f"see {kit.task_log_dir(dag_id, run_id)}"

            ((status, by, deleted),) = kit.query(
                "SELECT status, applied_by, deleted FROM recon.repairs WHERE plan_id = %s",
                plan.plan_id,
            )
            assert status == "applied" and deleted == len(plan.deletes), (status, deleted)
            assert by.startswith(f"airflow:{dag_id}/{run_id}"), by
            keys = [int(d.key[0]) for d in plan.deletes]
            conn = postgres_connection("postgres_sink").psycopg2_kwargs()
            with psycopg2.connect(**conn) as pg, pg.cursor() as cur:
                cur.execute(f"SELECT count(*) FROM {truth.sink_table} WHERE id = ANY(%s)", (keys,))
                assert cur.fetchone()[0] == 0, "the planned rows are still in the sink"
            pg.close()
    finally:
        remove_run(SCENARIO, tag)
        with results_db() as pg:
            forget_pipeline(pg, pipeline)
