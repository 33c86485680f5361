"""The project's own Airflow (``scripts/airflow.sh``: api-server, scheduler, dag-processor, its
LocalExecutor) for P5, so a DAG run is measured as a deployment runs it: each task a process of
its own that parses the DAG file and pays its own imports, the scheduler's hand-offs between
tasks included.

Its tasks take their settings from the environment Airflow started with (``RECON_SPARK_REMOTE``
among them), so :func:`project_airflow` (re)starts it with the environment a figure needs, and
after the bench leaves it as it found it: stopped, or running with the project's defaults.
"""

from __future__ import annotations

import contextlib
import os
import time
import urllib.error
from collections.abc import Iterator
from typing import Any

from bench import progress, script

TERMINAL = ("success", "failed")
#: The project's DAG that touches Kafka and PostgreSQL through Airflow's connections (no data).
WARM_UP_DAG = "recon_stack_check"


def _default_env() -> dict[str, str]:
    """The environment a user's ``make up`` starts Airflow with: ``scripts/env.sh`` decides
    ``RECON_SPARK_REMOTE`` when it is unset (the bench sets it empty for its own runs)."""
    return {k: v for k, v in os.environ.items() if k != "RECON_SPARK_REMOTE"}


@contextlib.contextmanager
def project_airflow(env: dict[str, str] | None = None) -> Iterator[Any]:
    """The project's Airflow, started with ``env`` added to the bench's environment and warmed
    by one run of :data:`WARM_UP_DAG` (the first task after a start waits for the executor's
    worker process: 4.5 s measured, which a scheduled pipeline's runs do not meet); yields a
    REST client (``recon_workload.demo.Airflow``)."""
    from recon_workload.demo import Airflow

    was_running = script("airflow.sh", "status").returncode == 0
    script("airflow.sh", "stop")
    started = script("airflow.sh", "start", env={**os.environ, **(env or {})})
    try:
        if started.returncode != 0:
            raise RuntimeError(f"Airflow did not start: {started.stderr[-2000:]}")
        client = Airflow(os.environ["RECON_AIRFLOW_BASE_URL"], "admin",
                         os.environ["RECON_AIRFLOW_ADMIN_PASSWORD"])  # fmt: skip
        run_dag(client, WARM_UP_DAG, "warm-up")
        yield client
    finally:
        script("airflow.sh", "stop")
        if was_running:
            script("airflow.sh", "start", env=_default_env())


def run_dag(client: Any, dag_id: str, label: str, timeout: float = 900) -> tuple[str, str, float]:
    """Trigger one run of ``dag_id`` once the dag-processor has it (a file just declared is
    parsed within its scan interval) and wait for its end; returns the run's id, its state and
    the seconds from the trigger to the end as seen here (polled each second).

    :raises RuntimeError: the DAG never appeared or the run did not finish within ``timeout``.
    """
    deadline = time.monotonic() + timeout
    run_id = f"bench_{label}_{time.time_ns()}"
    while True:
        try:
            client.wait_for_dag(dag_id, timeout=max(1.0, deadline - time.monotonic()))
            client.trigger(dag_id, run_id)
            triggered = time.monotonic()
            break
        except urllib.error.HTTPError as exc:
            # A DAG of the same id from an earlier bench is listed before its new parse is
            # stored: the trigger is refused (404) until it is.
            if exc.code != 404 or time.monotonic() > deadline:
                raise RuntimeError(f"{dag_id}: no DAG run could be triggered: {exc}") from None
            time.sleep(2)
    progress(f"P5: {dag_id} run {run_id} triggered", transient=True)
    while time.monotonic() < deadline:
        state = client.state(dag_id, run_id)
        if state in TERMINAL:
            return run_id, state, time.monotonic() - triggered
        time.sleep(1)
    raise RuntimeError(f"{dag_id} run {run_id} did not finish within {timeout:.0f} s")
