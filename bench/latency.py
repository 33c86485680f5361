"""P5: one pipeline's whole reconciliation DAG run, snapshot to alert, with ``airflow dags test``.

The run executes every task as the scheduler would (the Spark steps under spark-submit, so the
figure includes three JVM starts; or, with ``RECON_SPARK_REMOTE``, in the task's process as
clients of a Spark Connect server; or, for ``engine: local``, in the task's process without a
JVM) and the Great Expectations checkpoint. The data carries the
usual fault mix, so the contract is broken and the alert task sends its webhook and email to the
local catcher: the DAG run ends ``failed`` by design, and the bench checks that the alert was sent.
"""

from __future__ import annotations

import os
import time
from typing import Any

import yaml

from bench import generate, progress, script
from bench.measure import run


def dag_run(
    ds: generate.Dataset, env: dict[str, str] | None = None, engine: str = "spark"
) -> dict[str, Any]:
    """One DAG run over ``ds``; ``env`` adds to the run's environment (``RECON_SPARK_REMOTE``:
    the Spark steps as clients of that Spark Connect server, in the task's process).

    :param engine: the pipeline's ``engine`` (``local``: every step in its task's process, no
        JVM at all)."""
    from recon.engine import results_db
    from recon.store import ensure_schema, forget_pipeline

    pipeline = "bench_p5_latency"
    path = os.path.join(generate.state_dir(), "pipelines-p5.yaml")
    decl = {**generate.pipeline_yaml(ds, engine=engine), "retries": 0}
    with open(path, "w", encoding="utf-8") as fh:
        yaml.safe_dump({"pipelines": {pipeline: decl}}, fh)
    with results_db() as pg:
        ensure_schema(pg)
        forget_pipeline(pg, pipeline)
    init = script("airflow.sh", "init")
    if init.returncode != 0:
        raise RuntimeError(f"airflow init failed: {init.stderr[-2000:]}")
    catcher_was_running = script("catcher.sh", "status").returncode == 0
    script("catcher.sh", "start")
    try:
        progress(f"P5: airflow dags test recon_{pipeline} ({ds.messages:,} messages)")
        started = time.monotonic()
        try:
            # Paused: a running Airflow's scheduler sharing the metadata database must not
            # queue this run's tasks (its workers do not know the bench pipeline).
            env = {**(env or {}), "RECON_PIPELINES": path,
                   "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True"}  # fmt: skip
            measured = run(["airflow", "dags", "test", f"recon_{pipeline}"], env=env)
            state = "success"
        except RuntimeError as exc:  # a broken contract fails the alert task, by design
            state = "failed"
            detail = str(exc)
            measured = None
        seconds = time.monotonic() - started
    finally:
        if not catcher_was_running:
            script("catcher.sh", "stop")
    with results_db() as pg, pg.cursor() as cur:
        cur.execute("SELECT status, contract_passed, counts, duration_seconds FROM recon.runs "
                    "WHERE pipeline = %s", (pipeline,))  # fmt: skip
        runs = cur.fetchall()
        cur.execute("SELECT channel FROM recon.alerts WHERE pipeline = %s", (pipeline,))
        alerts = sorted(r[0] for r in cur.fetchall())
    if len(runs) != 1 or runs[0][1] is not False or not alerts:
        raise SystemExit(f"P5: the DAG run did not end in an alert: runs {runs}, alerts {alerts}, "
                         f"dags test: {state} {detail if state == 'failed' else ''}")  # fmt: skip
    return {"messages": ds.messages, "seconds": round(seconds, 1), "dag_state": state,
            "status": runs[0][0], "counts": runs[0][2], "reconcile_seconds": runs[0][3],
            "alerts": alerts, **recorded_run(f"recon_{pipeline}"),
            "peak_rss_mb": measured.peak_rss_mb if measured else None}  # fmt: skip


def recorded_run(dag_id: str) -> dict[str, Any]:
    """The DAG's newest run as Airflow's metadata database records it: ``dag_run_seconds``
    (created to its last task done: the duration the Airflow UI shows for a scheduled run,
    without the ``dags test`` command's own start and the DAG file's parse before it) and
    ``tasks``, each task's seconds in the order they ran; empty when no finished run is
    recorded."""
    from sqlalchemy import create_engine, text

    engine = create_engine(os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"])
    try:
        with engine.connect() as db:
            newest = db.execute(
                text("SELECT run_id, start_date, end_date FROM dag_run WHERE dag_id = :dag "
                     "ORDER BY id DESC LIMIT 1"),
                {"dag": dag_id},
            ).one_or_none()  # fmt: skip
            if newest is None or newest.start_date is None or newest.end_date is None:
                return {}  # the report then gives the command's wall time alone
            run_id, started, ended = newest
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
