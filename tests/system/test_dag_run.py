"""A whole reconciliation DAG run (`airflow dags test`) on a real pipeline fed by the workload."""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from fixtures.pipelines import DAGS_TEST_PIPELINE
from fixtures.spark_connect import running_server, sessions

from recon.config.connections import postgres_connection
from recon.run.paths import safe_name
from recon.run.services import default_data_dir
from recon.run.steps import results_db, results_path
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


def _declared(tmp_path: Path, name: str, truth: ScenarioResult, engine: str,
              extra: str = "") -> dict[str, str]:  # fmt: skip
    """The pipeline's YAML written for the workload run (``extra``: more of its keys), and the
    environment its DAG runs in."""
    pipelines = tmp_path / "pipelines.yaml"
    pipelines.write_text(
        DAGS_TEST_PIPELINE.format(
            name=name,
            topic=truth.topic,
            group=truth.consumer_group,
            table=truth.sink_table,
            engine=engine,
        )
        + extra
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


def _dags_test(name: str, env: dict[str, str], logical_date: str | None = None) -> str:
    """One whole run of the pipeline's DAG by `airflow dags test`; it must end in success.
    Returns what the run printed."""
    result = subprocess.run(
        ["airflow", "dags", "test", f"recon_{name}", *([logical_date] if logical_date else [])],
        env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    tail = _failure_excerpt(result.stdout + result.stderr)
    assert result.returncode == 0, tail
    assert "state=success" in result.stdout + result.stderr, tail
    return result.stdout + result.stderr


def _assert_ran_and_committed(output: str, name: str, row: tuple[Any, ...], delivered: int,
                              *, submitted: bool, read_by_driver: bool) -> None:  # fmt: skip
    """What every whole DAG run is held to: how its Spark steps ran, and its one run row
    (``status, contract_passed, counts, validation_url``).

    :param submitted: whether a step ran under spark-submit (the Spark engine, not attached).
    :param read_by_driver: whether the Spark engine's snapshot_topic and validate tasks read the
        window and the results themselves, starting no Spark (few messages:
        recon.engines.spark_snapshot.reads_on_driver); never under the local engine."""
    assert ("Spark-Submit cmd" in output) == submitted, "spark-submit (not) used"
    assert ("(read by the driver)" in output) == read_by_driver
    status, passed, counts, url = row
    assert (status, passed) == ("passed", True)
    assert counts["delivered"] == delivered
    assert url and "/recon/docs/" in url
    assert f"recon_results_pandas-{name}" in url, url  # validated on pandas, every engine


@pytest.mark.parametrize(
    "attached",
    # attached: the Spark steps run in their tasks' processes as clients of the project's Spark
    # Connect server (RECON_SPARK_REMOTE), not under spark-submit. engine: local's whole DAG
    # run is the first of test_an_idle_local_pipeline_runs_green_and_prunes_the_old_run, which
    # checks it as these are checked (one DAG run fewer).
    [False, True],
    ids=["spark", "spark-connect"],
)
def test_dags_test_runs_every_task_and_commits_the_verdicts(tmp_path: Path, attached: bool) -> None:
    engine = "spark"
    tag = uuid.uuid4().hex[:6]
    truth = run_scenario(
        "exactly_once_idempotent_consumer", messages=150, run_tag=tag, progress=False
    )
    name = f"systest_{tag}"
    env = _declared(tmp_path, name, truth, engine)
    try:
        if attached:
            with running_server() as remote:
                before = sessions()
                output = _dags_test(name, {**env, "RECON_SPARK_REMOTE": remote})
                # reconcile: a session of the server's.
                assert len(sessions() - before) >= 1, "the Spark step did not attach"
        else:
            output = _dags_test(name, env)

        kwargs = postgres_connection("postgres_recon").psycopg2_kwargs()
        with psycopg2.connect(**kwargs) as pg, pg.cursor() as cur:
            cur.execute(
                "SELECT status, contract_passed, counts, validation_url FROM recon.runs "
                "WHERE pipeline = %s",
                (name,),
            )
            rows = cur.fetchall()
        assert len(rows) == 1
        assert truth.counts["delivered"] == 150
        _assert_ran_and_committed(output, name, rows[0], 150, submitted=not attached,
                                  read_by_driver=True)  # fmt: skip
    finally:
        remove_run("exactly_once_idempotent_consumer", tag)
        with results_db() as pg:
            forget_pipeline(pg, name)


def test_an_idle_local_pipeline_runs_green_and_prunes_the_old_run(tmp_path: Path) -> None:
    """The first DAG run on ``engine: local`` is held to what the Spark engine's are
    (test_dags_test_runs_every_task_and_commits_the_verdicts): no Spark, verdicts committed,
    validated on pandas. A second DAG run with nothing new (no record, no sink row since the
    first) is a normal, passing run on ``engine: local``: its empty sink range is read as empty
    (it used to crash with 'Empty CSV file' and leave the run 'running'). The pipeline keeps runs
    for a day (``retention_days: 1``) and the first run is made to look ten days old: the second
    DAG run's ``prune`` task removes it, but not the results the second run started from."""
    tag = uuid.uuid4().hex[:6]
    truth = run_scenario(
        "exactly_once_idempotent_consumer", messages=60, run_tag=tag, progress=False
    )
    name = f"systest_idle_{tag}"
    env = _declared(tmp_path, name, truth, "local", extra="    retention_days: 1\n")
    kwargs = postgres_connection("postgres_recon").psycopg2_kwargs()
    query = ("SELECT run_id, status, contract_passed, counts, sink_rows_scanned, validation_url "
             "FROM recon.runs WHERE pipeline = %s ORDER BY snapshot_at")  # fmt: skip
    try:
        output = _dags_test(name, env, "2026-01-01")
        with psycopg2.connect(**kwargs) as pg, pg.cursor() as cur:
            cur.execute(query, (name,))
            ((first_id, *first),) = cur.fetchall()
        assert truth.counts["delivered"] == 60
        _assert_ran_and_committed(output, name, (*first[:3], first[4]), 60, submitted=False,
                                  read_by_driver=False)  # fmt: skip
        _age_first_run(kwargs, name, first_id)

        _dags_test(name, env, "2026-01-02")
        with psycopg2.connect(**kwargs) as pg, pg.cursor() as cur:
            cur.execute(query, (name,))
            rows = cur.fetchall()
        assert [r[1:3] for r in rows] == [("passed", True)], rows  # the first run is pruned
        idle = rows[0]
        assert sum(idle[3].values()) == 0 and idle[4] == 0, idle
        data_dir = default_data_dir()
        assert not os.path.exists(os.path.join(data_dir, "windows", name, safe_name(first_id)))
        assert os.path.isdir(results_path(data_dir, name, first_id))  # the idle run's base
    finally:
        remove_run("exactly_once_idempotent_consumer", tag)
        with results_db() as pg:
            forget_pipeline(pg, name)


def _age_first_run(kwargs: dict[str, object], name: str, run_id: str) -> None:
    """As if the run had ended ten days ago: its row and every file of the pipeline so far."""
    with psycopg2.connect(**kwargs) as pg, pg.cursor() as cur:
        cur.execute("UPDATE recon.runs SET started_at = started_at - interval '10 days', "
                    "finished_at = finished_at - interval '10 days' "
                    "WHERE pipeline = %s AND run_id = %s", (name, run_id))  # fmt: skip
    old = time.time() - 10 * 86400
    for folder in ("windows", "results", "ledger"):
        for parent, dirs, files in os.walk(os.path.join(default_data_dir(), folder, name)):
            for entry in [parent, *(os.path.join(parent, n) for n in dirs + files)]:
                os.utime(entry, (old, old))
