"""Fixtures for the system tier: the project's running Airflow, and what the browser test needs.

Nothing is skipped: a missing service or browser fails with the command that fixes it.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from recon.store import forget_pipeline

ROOT = Path(__file__).resolve().parents[2]


def _require_env() -> None:
    if "AIRFLOW_CONN_POSTGRES_RECON" not in os.environ:
        pytest.fail(
            "the project's environment is not loaded: run the tests with `make test` "
            "or `scripts/with-env.sh python -m pytest ...`",
            pytrace=False,
        )


AIRFLOW_COMPONENTS = ("metadatabase", "scheduler", "triggerer", "dag_processor")


@pytest.fixture(scope="session")
def airflow_url() -> str:
    """The project's Airflow (``scripts/airflow.sh start``), every component reporting healthy.

    Waits up to two minutes: a component that died (for instance on the metadata database's
    restart in the integration tier) is restarted by ``scripts/airflow_supervisor.py``.
    """
    _require_env()
    import httpx

    url = f"http://127.0.0.1:{os.environ.get('RECON_AIRFLOW_PORT', '23080')}"
    deadline = time.monotonic() + 120
    problem = "no answer yet"
    while time.monotonic() < deadline:
        try:
            health = httpx.get(f"{url}/api/v2/monitor/health", timeout=10)
            health.raise_for_status()
            status = health.json()
        except (httpx.HTTPError, ValueError) as exc:
            problem = f"not answering: {exc}"
        else:
            sick = [c for c in AIRFLOW_COMPONENTS if status.get(c, {}).get("status") != "healthy"]
            if not sick:
                return url
            problem = f"unhealthy: {', '.join(sick)}"
        time.sleep(3)
    from dagrun_kit import airflow_log

    pytest.fail(
        f"Airflow at {url} is {problem} after 120 s: see {airflow_log()}; restart it with "
        "`scripts/airflow.sh stop && scripts/airflow.sh start`",
        pytrace=False,
    )


@pytest.fixture(scope="session")
def browser_deps() -> dict[str, str]:
    """Debian's chromium and npm's playwright-core (``scripts/browser-deps.sh``, idempotent)."""
    _require_env()
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "browser-deps.sh")],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        pytest.fail(f"scripts/browser-deps.sh failed:\n{done.stdout}{done.stderr}", pytrace=False)
    state = Path(os.environ.get("RECON_STATE") or ROOT / ".state")
    return {"chromium": "/usr/bin/chromium", "node_dir": str(state / "node")}


def seed_runs(pg: Any, pipeline: str, *, runs: int, discrepancies: int) -> list[str]:
    """Insert ``runs`` finished runs (oldest first, one minute apart, the last one failed) and
    ``discrepancies`` rows for the latest run; returns the run ids, oldest first."""
    now = datetime.now(UTC)
    run_ids: list[str] = []
    with pg.cursor() as cur:
        for i in range(runs):
            run_id = f"scheduled__{(now - timedelta(minutes=runs - i)).isoformat()}"
            last = i == runs - 1
            counts = {
                "delivered": 1000 + 10 * i,
                "lost": discrepancies // 2 if last else 0,
                "duplicated": discrepancies - discrepancies // 2 if last else i % 2,
                "pending": 5,
            }
            cur.execute(
                "INSERT INTO recon.runs (pipeline, run_id, semantics, status, started_at, "
                "finished_at, counts, contract_passed, violations, duration_seconds) "
                "VALUES (%s, %s, 'exactly_once', %s, %s, %s, %s, %s, %s, 12.5)",
                (
                    pipeline, run_id, "failed" if last or i % 2 else "passed",
                    now - timedelta(minutes=runs - i), now - timedelta(minutes=runs - i - 0.5),
                    json.dumps(counts), not (last or i % 2),
                    json.dumps([{"verdict": "lost", "count": counts["lost"], "allowed": 0,
                                 "reason": "exactly_once forbids lost messages"}] if last else []),
                ),
            )  # fmt: skip
            run_ids.append(run_id)
        for n in range(discrepancies):
            lost = n < discrepancies // 2
            cur.execute(
                "INSERT INTO recon.discrepancies (pipeline, run_id, verdict, message_id, topic, "
                "partition, offsets, first_offset, sink_keys, sink_count) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    pipeline, run_ids[-1], "lost" if lost else "duplicated", f"msg-{n:05d}",
                    f"{pipeline}-topic", n % 3, [100 + n], 100 + n,
                    [] if lost else [f"{n}", f"{n + 1000}"], 0 if lost else 2,
                ),
            )  # fmt: skip
    pg.commit()
    return run_ids


@pytest.fixture
def seeded_pipeline() -> Iterator[tuple[str, list[str]]]:
    """A uniquely named pipeline with 8 runs and 12 discrepancies, deleted afterwards."""
    _require_env()
    import psycopg2

    from recon.config.connections import postgres_connection
    from recon.store import ensure_schema

    pg = psycopg2.connect(**postgres_connection("postgres_recon").psycopg2_kwargs())
    pipeline = f"uitest_{uuid.uuid4().hex[:8]}"
    try:
        ensure_schema(pg)
        yield pipeline, seed_runs(pg, pipeline, runs=8, discrepancies=12)
    finally:
        pg.rollback()
        forget_pipeline(pg, pipeline)  # its runs, discrepancies, latencies, alerts
        pg.close()


# The one retried DAG run that the tests of test_airflow_faults.py share (it costs minutes of
# spark-submit): they stay in that file, so that the tier's two workers, which get whole files,
# never make it twice.
from fault_runs import retried_run  # noqa: E402, F401
