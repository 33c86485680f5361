"""What the system tests need to drive the project's running Airflow: its REST API (v2), test
pipelines it can see, and the stored results of a pipeline.

Test pipelines are YAML files in ``$RECON_PIPELINES_DIR`` (``fixtures.pipelines.DAG_DIR_PIPELINE``),
which the running dag-processor reads (``dags/recon_pipelines_dir.py``): no restart, and the
demo's DAGs are untouched.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from recon.run.steps import results_db

TERMINAL = ("success", "failed")


def pipelines_dir() -> Path:
    folder = os.environ.get("RECON_PIPELINES_DIR")
    assert folder, "RECON_PIPELINES_DIR is unset: load scripts/env.sh (scripts/with-env.sh)"
    return Path(folder)


@contextmanager
def declared(name: str, text: str) -> Iterator[Path]:
    """The pipeline file ``<dir>/<name>.yaml`` for the test's duration."""
    path = pipelines_dir() / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)  # the dag-processor never reads half a file
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def airflow_log() -> Path:
    """The supervisor's log of every Airflow component (``scripts/airflow.sh``)."""
    root = Path(__file__).resolve().parents[2]
    return Path(os.environ.get("AIRFLOW_HOME", root / ".state" / "airflow")) / "airflow.log"


def log_tail(component: str = "dag-processor", lines: int = 25) -> str:
    try:
        text = airflow_log().read_text(errors="replace").splitlines()
    except OSError as exc:
        return f"({exc})"
    mine = [line[:300] for line in text if line.startswith((component, "supervisor"))]
    return "\n".join(mine[-lines:])


class Airflow:
    """Just enough of the REST API v2, as the admin user (simple auth manager)."""

    def __init__(self, base_url: str) -> None:
        password = os.environ.get("RECON_AIRFLOW_ADMIN_PASSWORD")
        assert password, "RECON_AIRFLOW_ADMIN_PASSWORD is unset: run `make setup`"
        self.base = base_url.rstrip("/")
        self.http = httpx.Client(base_url=self.base, timeout=30)
        r = self.http.post("/auth/token", json={"username": "admin", "password": password})
        assert r.status_code in (200, 201), f"no Airflow token: {r.status_code} {r.text[:300]}"
        self.token = str(r.json()["access_token"])
        self.http.headers["Authorization"] = f"Bearer {self.token}"

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        r = self.http.request(method, f"/api/v2{path}", **kwargs)
        assert r.status_code < 300, f"{method} /api/v2{path}: {r.status_code} {r.text[:500]}"
        return r.json() if r.content else None

    def wait_for_dag(self, dag_id: str, timeout: float = 180) -> None:
        """Until the dag-processor has parsed the DAG (it re-reads its files every 30 s). A paused
        DAG fails here: the scheduler would leave its runs' tasks unscheduled, with no error."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r = self.http.get(f"/api/v2/dags/{dag_id}")
            if r.status_code == 200:
                assert not r.json()["is_paused"], (
                    f"DAG {dag_id} was created paused: some process parsed its file with "
                    "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION=True before the dag-processor did"
                )
                return
            time.sleep(2)
        health = self.http.get("/api/v2/monitor/health").text[:400]
        errors = self.http.get("/api/v2/importErrors").text[:800]
        raise AssertionError(
            f"Airflow did not show DAG {dag_id} within {timeout:.0f} s (RECON_PIPELINES_DIR="
            f"{os.environ.get('RECON_PIPELINES_DIR')}). Health: {health}. Import errors: {errors}. "
            f"The dag-processor's last lines in $AIRFLOW_HOME/airflow.log:\n{log_tail()}"
        )

    def trigger(self, dag_id: str, run_id: str, conf: dict[str, Any] | None = None) -> None:
        body = {"dag_run_id": run_id, "logical_date": None, "conf": conf or {}}
        self.call("POST", f"/dags/{dag_id}/dagRuns", json=body)

    def run(self, dag_id: str, run_id: str) -> dict[str, Any]:
        return dict(self.call("GET", f"/dags/{dag_id}/dagRuns/{run_id}"))

    def task_instances(self, dag_id: str, run_id: str) -> dict[str, dict[str, Any]]:
        found = self.call("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances")
        return {ti["task_id"]: ti for ti in found["task_instances"]}

    def wait_run(self, dag_id: str, run_id: str, timeout: float = 600) -> dict[str, Any]:
        """Until the DAG run finishes; fails naming each task's state when it does not."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            run = self.run(dag_id, run_id)
            if run["state"] in TERMINAL:
                return run
            time.sleep(3)
        states = {t: ti["state"] for t, ti in self.task_instances(dag_id, run_id).items()}
        raise AssertionError(
            f"DAG run {dag_id}/{run_id} did not finish within {timeout:.0f} s; tasks: {states}. "
            f"Task logs: $AIRFLOW_HOME/logs/dag_id={dag_id}/run_id={run_id}/"
        )

    def runs(self, dag_id: str) -> list[dict[str, Any]]:
        found = self.call("GET", f"/dags/{dag_id}/dagRuns", params={"order_by": "logical_date"})
        return list(found["dag_runs"])

    def xcoms(self, dag_id: str, run_id: str) -> list[Any]:
        """Every XCom value of the run, as the API serves it."""
        listing = self.call("GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/~/xcomEntries")
        values = []
        for entry in listing["xcom_entries"]:
            path = f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{entry['task_id']}/xcomEntries"
            values.append(
                self.call("GET", f"{path}/{entry['key']}", params={"map_index": entry["map_index"]})
            )
        return values


def task_log_dir(dag_id: str, run_id: str) -> Path:
    return Path(os.environ["AIRFLOW_HOME"]) / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}"


def query(sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with results_db() as pg, pg.cursor() as cur:
        cur.execute(sql, args)
        return list(cur.fetchall())


def runs(pipeline: str) -> dict[str, dict[str, Any]]:
    """``recon.runs`` of a pipeline by run id."""
    rows = query(
        "SELECT run_id, status, counts, contract_passed, base_run_id, finished_at, error "
        "FROM recon.runs WHERE pipeline = %s",
        pipeline,
    )
    keys = ("status", "counts", "contract_passed", "base_run_id", "finished_at", "error")
    return {r[0]: dict(zip(keys, r[1:], strict=True)) for r in rows}


def windows(pipeline: str, run_id: str) -> dict[int, tuple[int, int, int]]:
    """The run's snapshot per partition: (window_from, window_to, committed_offset)."""
    rows = query(
        "SELECT partition, window_from, window_to, committed_offset FROM recon.offset_snapshots "
        "WHERE pipeline = %s AND run_id = %s",
        pipeline,
        run_id,
    )
    return {p: (f, t, c) for p, f, t, c in rows}


def watermarks(pipeline: str) -> dict[int, tuple[int, str]]:
    """Where the pipeline stands per partition: (next_offset, run that put it there)."""
    rows = query(
        "SELECT partition, next_offset, run_id FROM recon.watermarks WHERE pipeline = %s",
        pipeline,
    )
    return {p: (n, r) for p, n, r in rows}


def discrepancies(pipeline: str) -> list[tuple[Any, ...]]:
    """Every discrepancy row, sorted: (run_id, verdict, message_id, partition, first_offset)."""
    return query(
        "SELECT run_id, verdict, message_id, partition, first_offset FROM recon.discrepancies "
        "WHERE pipeline = %s ORDER BY 1, 2, 3, 4, 5",
        pipeline,
    )


def judged(counts: dict[str, int]) -> dict[str, int]:
    """Non-zero verdict counts, without the producer-side flag (as ``truth.counts`` has them)."""
    return {v: n for v, n in counts.items() if n and v != "topic_duplicate"}
