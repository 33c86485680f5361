"""A whole reconciliation DAG run (`airflow dags test`) on a real pipeline fed by the workload."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import psycopg2
import pytest
from fixtures.pipelines import DAGS_TEST_PIPELINE

from recon.connections import postgres_connection
from recon.engine import results_db
from recon.store import forget_pipeline
from recon_workload import ScenarioResult, remove_run, run_scenario

pytestmark = pytest.mark.system


def _failure_excerpt(output: str, limit: int = 40) -> str:
    """The task boundaries and error lines of a `dags test` run, then its last lines: the first
    failing task's error, not only the last task's."""
    lines = output.splitlines()
    marks = ("[DAG TEST]", "[error", "ERROR", "Traceback", "Error:", "Exception:")
    picked = [line for line in lines if any(m in line for m in marks)][:limit]
    return "\n".join([*picked, "--- last lines ---", *lines[-15:]])


def _declared(tmp_path: Path, name: str, truth: ScenarioResult, engine: str) -> dict[str, str]:
    """The pipeline's YAML written for the workload run, and the environment its DAG runs in."""
    pipelines = tmp_path / "pipelines.yaml"
    pipelines.write_text(
        DAGS_TEST_PIPELINE.format(
            name=name,
            topic=truth.topic,
            group=truth.consumer_group,
            table=truth.sink_table,
            engine=engine,
        )  # fmt: skip
    )
    # `dags test` writes the DAG to the metadata database the running stack shares. Paused, and
    # without a schedule, the stack's scheduler neither starts runs of it nor queues this run's
    # tasks: its workers would fail them, not knowing the pipeline (the CI failure of stop 14).
    # It writes every DAG of the bundle it parses, so the pipelines directory it sees is empty:
    # else a pipeline another test just declared there is created paused, and that test's DAG
    # run never starts (the CI failure of stop 27).
    no_dir_pipelines = tmp_path / "pipelines.d"
    no_dir_pipelines.mkdir()
    return {
        **os.environ,
        "RECON_PIPELINES": str(pipelines),
        "RECON_PIPELINES_DIR": str(no_dir_pipelines),
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
    }


def _dags_test(name: str, env: dict[str, str], logical_date: str | None = None) -> None:
    """One whole run of the pipeline's DAG by `airflow dags test`; it must end in success."""
    result = subprocess.run(
        ["airflow", "dags", "test", f"recon_{name}", *([logical_date] if logical_date else [])],
        env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    tail = _failure_excerpt(result.stdout + result.stderr)
    assert result.returncode == 0, tail
    assert "state=success" in result.stdout + result.stderr, tail


@pytest.mark.parametrize("engine", ["spark", "local"])
def test_dags_test_runs_every_task_and_commits_the_verdicts(tmp_path: Path, engine: str) -> None:
    tag = uuid.uuid4().hex[:6]
    truth = run_scenario(
        "exactly_once_idempotent_consumer", messages=150, run_tag=tag, progress=False
    )
    name = f"systest_{tag}"
    env = _declared(tmp_path, name, truth, engine)
    try:
        _dags_test(name, env)

        kwargs = postgres_connection("postgres_recon").psycopg2_kwargs()
        with psycopg2.connect(**kwargs) as pg, pg.cursor() as cur:
            cur.execute(
                "SELECT status, contract_passed, counts, validation_url FROM recon.runs "
                "WHERE pipeline = %s",
                (name,),
            )
            rows = cur.fetchall()
        assert len(rows) == 1
        status, passed, counts, url = rows[0]
        assert (status, passed) == ("passed", True)
        assert counts["delivered"] == truth.counts["delivered"] == 150
        assert url and "/recon/docs/" in url
    finally:
        remove_run("exactly_once_idempotent_consumer", tag)
        with results_db() as pg:
            forget_pipeline(pg, name)


def test_an_idle_local_pipeline_runs_green(tmp_path: Path) -> None:
    """A second DAG run with nothing new (no record, no sink row since the first) is a normal,
    passing run on ``engine: local``: its empty sink range is read as empty (it used to crash
    with 'Empty CSV file' and leave the run 'running')."""
    tag = uuid.uuid4().hex[:6]
    truth = run_scenario(
        "exactly_once_idempotent_consumer", messages=60, run_tag=tag, progress=False
    )
    name = f"systest_idle_{tag}"
    env = _declared(tmp_path, name, truth, "local")
    try:
        for day in ("2026-01-01", "2026-01-02"):
            _dags_test(name, env, day)

        kwargs = postgres_connection("postgres_recon").psycopg2_kwargs()
        with psycopg2.connect(**kwargs) as pg, pg.cursor() as cur:
            cur.execute(
                "SELECT status, contract_passed, counts, sink_rows_scanned FROM recon.runs "
                "WHERE pipeline = %s ORDER BY snapshot_at",
                (name,),
            )
            rows = cur.fetchall()
        assert [(r[0], r[1]) for r in rows] == [("passed", True), ("passed", True)], rows
        first, idle = rows[0][2], rows[1][2]
        assert first["delivered"] == truth.counts["delivered"] == 60
        assert sum(idle.values()) == 0, idle
        assert rows[1][3] == 0
    finally:
        remove_run("exactly_once_idempotent_consumer", tag)
        with results_db() as pg:
            forget_pipeline(pg, name)
