"""P5: one pipeline's whole reconciliation DAG run, snapshot to alert, under the project's own
Airflow (``bench.scheduled``): the scheduler hands each task to the LocalExecutor, each task a
process of its own (the Spark steps under spark-submit, so the figure includes three JVM starts;
or, with ``RECON_SPARK_REMOTE``, in the task's process as clients of a Spark Connect server; or,
for ``engine: local``, in the task's process without a JVM), the Great Expectations checkpoint
included. The data carries the usual fault mix, so the contract is broken and the alert task
sends its webhook and email to the local catcher: the DAG run ends ``failed`` by design, and the
bench checks that the alert was sent.
"""

from __future__ import annotations

import os
from typing import Any

import yaml

from bench import generate, progress, script
from bench.scheduled import run_dag

PIPELINE = "bench_p5_latency"


def dag_run(airflow: Any, ds: generate.Dataset, engine: str = "spark") -> dict[str, Any]:
    """One DAG run over ``ds`` on the running project Airflow (``bench.scheduled.project_airflow``:
    the environment it started with decides how the Spark steps run).

    :param airflow: its REST client.
    :param engine: the pipeline's ``engine`` (``local``: every step in its task's process, no
        JVM at all).
    """
    from recon.run.steps import results_db
    from recon.store import ensure_schema, forget_pipeline

    # Declared where the running dag-processor reads pipeline files (dags/recon_pipelines_dir.py).
    folder = os.environ["RECON_PIPELINES_DIR"]
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{PIPELINE}.yaml")
    decl = {**generate.pipeline_yaml(ds, engine=engine), "retries": 0}
    with results_db() as pg:
        ensure_schema(pg)
        forget_pipeline(pg, PIPELINE)
    with open(f"{path}.tmp", "w", encoding="utf-8") as fh:
        yaml.safe_dump({"pipelines": {PIPELINE: decl}}, fh)
    os.replace(f"{path}.tmp", path)  # the dag-processor never reads half a file
    catcher_was_running = script("catcher.sh", "status").returncode == 0
    script("catcher.sh", "start")
    try:
        progress(f"P5: a DAG run of recon_{PIPELINE}, engine {engine} ({ds.messages:,} messages)")
        run_id, state, seconds = run_dag(airflow, f"recon_{PIPELINE}", engine)
    finally:
        os.unlink(path)
        if not catcher_was_running:
            script("catcher.sh", "stop")
    with results_db() as pg, pg.cursor() as cur:
        cur.execute("SELECT status, contract_passed, counts, duration_seconds FROM recon.runs "
                    "WHERE pipeline = %s", (PIPELINE,))  # fmt: skip
        runs = cur.fetchall()
        cur.execute("SELECT channel FROM recon.alerts WHERE pipeline = %s", (PIPELINE,))
        alerts = sorted(r[0] for r in cur.fetchall())
    if len(runs) != 1 or runs[0][1] is not False or not alerts:
        raise SystemExit(f"P5: the DAG run did not end in an alert: runs {runs}, alerts {alerts}, "
                         f"DAG run {run_id} {state}: see its task logs in Airflow")  # fmt: skip
    return {"messages": ds.messages, "seconds": round(seconds, 1), "dag_state": state,
            "status": runs[0][0], "counts": runs[0][2], "reconcile_seconds": runs[0][3],
            "alerts": alerts, "scheduled": True,
            **recorded_run(f"recon_{PIPELINE}", run_id)}  # fmt: skip


def recorded_run(dag_id: str, run_id: str) -> dict[str, Any]:
    """The DAG run as Airflow's metadata database records it: ``dag_run_seconds`` (started to
    its last task done: the duration the Airflow UI shows) and ``tasks``, each task's seconds in
    the order they ran; empty when no finished run is recorded."""
    from sqlalchemy import create_engine, text

    engine = create_engine(os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"])
    try:
        with engine.connect() as db:
            found = db.execute(
                text("SELECT start_date, end_date FROM dag_run WHERE dag_id = :dag "
                     "AND run_id = :run"),
                {"dag": dag_id, "run": run_id},
            ).one_or_none()  # fmt: skip
            if found is None or found.start_date is None or found.end_date is None:
                return {}  # the report then gives the wall time alone
            started, ended = found
            tasks = db.execute(
                text("SELECT task_id, start_date, end_date FROM task_instance "
                     "WHERE dag_id = :dag AND run_id = :run ORDER BY start_date"),
                {"dag": dag_id, "run": run_id},
            ).all()  # fmt: skip
    finally:
        engine.dispose()
    return {
        "dag_run_seconds": round((ended - started).total_seconds(), 1),
        "tasks": {task: round((end - start).total_seconds(), 1) for task, start, end in tasks
                  if start is not None and end is not None},
    }  # fmt: skip
