"""An Airflow component that dies is restarted (issue 8's fault matrix, Airflow rows).

``airflow standalone`` never restarted its components: once a dag-processor died (a dropped
metadata-database connection when PostgreSQL restarts), newly declared pipelines never became DAGs.
``scripts/airflow_supervisor.py`` restarts them; this kills the dag-processor for real and checks
that a pipeline declared afterwards still becomes a DAG.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

import dagrun_kit as kit
import pytest
from fixtures.pipelines import DAG_DIR_PIPELINE
from proc_tree import find_process

pytestmark = pytest.mark.system


def _supervisor_pid() -> int:
    pidfile = Path(os.environ["AIRFLOW_HOME"]) / "supervisor.pid"
    assert pidfile.is_file(), f"no {pidfile}: is Airflow started by scripts/airflow.sh?"
    return int(pidfile.read_text())


def component_pid(component: str) -> int | None:
    """The ``airflow <component>`` process the supervisor started, if it runs."""
    return find_process(_supervisor_pid(), lambda argv: component.encode() in argv, depth=1)


def _wait_for_new_pid(component: str, old: int, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = component_pid(component)
        if pid is not None and pid != old:
            return pid
        time.sleep(0.5)
    raise AssertionError(
        f"the supervisor did not restart {component} within {timeout:.0f} s: "
        "see $AIRFLOW_HOME/airflow.log"
    )


def test_a_killed_dag_processor_is_restarted_and_parses_new_pipelines(airflow_url: str) -> None:
    victim = component_pid("dag-processor")
    assert victim is not None, "no dag-processor under the supervisor"
    os.kill(victim, signal.SIGKILL)
    _wait_for_new_pid("dag-processor", victim)

    tag = uuid.uuid4().hex[:6]
    pipeline = f"supervised_{tag}"
    text = DAG_DIR_PIPELINE.format(
        name=pipeline, engine="spark", semantics="at_least_once", schedule="null",
        topic=f"supervised-{tag}", group=f"supervised-{tag}", table=f"public.supervised_{tag}",
        tolerances="{}", retries=0,
    )  # fmt: skip
    with kit.declared(pipeline, text):
        kit.Airflow(airflow_url).wait_for_dag(f"recon_{pipeline}")
