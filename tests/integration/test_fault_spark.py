"""The Spark driver killed mid-job: while it writes the run's window, and while it judges it.

Only the driver JVM is killed (SIGKILL); the ``recon run`` process that launched it lives on and
must end with one clear line, no traceback and nothing committed. Running the same run id again
then gives the verdicts of an undisturbed run.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest
from faultkit import (
    assert_nothing_committed,
    rerun_equals_undisturbed,
    snapshot_recorded,
    start_recon_run,
    synthetic,
    wait_for,
)
from kill_switches import spark_driver_pid

pytestmark = pytest.mark.integration

EXIT_ERROR = 2


@pytest.mark.parametrize("phase", ["window_write", "reconcile"])
def test_spark_driver_killed(
    phase: str, tmp_path: Path, kafka_config: dict[str, str], pg_kwargs: dict[str, Any],
    spark: Any, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    name, control = f"spark_killed_{phase}", f"spark_killed_{phase}_control"
    if phase == "window_write":
        # Spark's tasks write the window, as they write any window past the driver's bound
        # (the driver reads one this small itself, with no Spark job to kill).
        monkeypatch.setenv("RECON_SPARK_DRIVER_READ", "0")
    with synthetic(kafka_config, pg_kwargs, 50_000, name, control, pending=30) as s:
        pipelines = tmp_path / "pipelines.yaml"
        pipelines.write_text(s.pipelines_yaml(name, control))
        data = tmp_path / "data"
        victim = start_recon_run(pipelines, name, "r1", data)
        if phase == "window_write":
            wait_for("the offset snapshot", lambda: snapshot_recorded(name, "r1"), alive=victim)
        else:
            wait_for("the window", lambda: victim.said("window written to"), alive=victim)
        driver = spark_driver_pid(victim.proc.pid)
        assert driver is not None, "no Spark driver JVM found under the run's process"
        os.kill(driver, signal.SIGKILL)

        code, err = victim.finish()
        assert code == EXIT_ERROR, f"exit {code}: {err[-3000:]}"
        assert "Traceback" not in err, err[-3000:]
        assert f"pipeline '{name}': the Spark driver died during run 'r1'" in err, err[-3000:]
        assert_nothing_committed(name)

        # The re-run and the control on the test session's Spark: no driver JVM of their own.
        rerun_equals_undisturbed(pipelines, name, control, data, s.expected, spark=spark)
