"""A run killed before its commit advances nothing; re-running the same run id then gives the
verdicts an undisturbed run gives."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from faultkit import recon_run_here
from fixtures.pipelines import SYNTHETIC_PIPELINE

from recon.run.steps import results_db
from recon.store import forget_pipeline
from recon_workload import remove_run, run_scenario

pytestmark = pytest.mark.integration


def _state(pipeline: str) -> tuple[object, ...]:
    with results_db() as pg, pg.cursor() as cur:
        cur.execute("SELECT count(*) FROM recon.watermarks WHERE pipeline = %s", (pipeline,))
        marks = cur.fetchone()[0]
        cur.execute("SELECT count(*) FROM recon.pipeline_state WHERE pipeline = %s", (pipeline,))
        state = cur.fetchone()[0]
        cur.execute("SELECT count(*) FROM recon.discrepancies WHERE pipeline = %s", (pipeline,))
        rows = cur.fetchone()[0]
        cur.execute("SELECT status, counts FROM recon.runs WHERE pipeline = %s", (pipeline,))
        runs = cur.fetchall()
    return marks, state, rows, runs


def test_killed_before_commit_advances_nothing(tmp_path: Path, spark: Any) -> None:
    tag = uuid.uuid4().hex[:6]
    truth = run_scenario("at_least_once", messages=120, run_tag=tag, progress=False)
    name, control = f"killed_{tag}", f"control_{tag}"
    pipelines = tmp_path / "pipelines.yaml"
    blocks = [
        SYNTHETIC_PIPELINE.format(
            name=n,
            topic=truth.topic,
            group=truth.consumer_group,
            table=truth.sink_table,
            kafka_conn="kafka_default",
            engine="spark",
        )  # fmt: skip
        for n in (name, control)
    ]
    pipelines.write_text("pipelines:" + "".join(blocks))
    base = ["recon", "--pipelines", str(pipelines), "run", "--data-dir", str(tmp_path / "d")]
    try:
        victim = subprocess.Popen(
            [*base, "--pipeline", name, "--run-id", "r1"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        # The reconcile step marks the run `running` again when it starts judging: the results
        # commit is at least several seconds of Spark work away.
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            with results_db() as pg, pg.cursor() as cur:
                cur.execute(
                    "SELECT status, base_run_id FROM recon.runs WHERE pipeline = %s "
                    "AND run_id = 'r1' AND snapshot_at IS NOT NULL",
                    (name,),
                )
                row = cur.fetchone()
            window_written = any((tmp_path / "d" / "windows" / name).glob("r1/pending/_SUCCESS"))
            if row and window_written:
                break
            assert victim.poll() is None, "the run ended before it could be killed"
            time.sleep(0.05)
        else:
            raise AssertionError("the run never reached its reconcile step")
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait(timeout=30)

        marks, state, rows, runs = _state(name)
        assert (marks, state, rows) == (0, 0, 0), "a killed run advanced or committed something"
        assert [r[0] for r in runs] == ["running"] and runs[0][1] == {}

        # The re-run and the control on the test session's Spark (no driver JVM of their own):
        # the killed run above is the `recon run` process.
        again = recon_run_here(pipelines, name, "r1", tmp_path / "d", spark)
        undisturbed = recon_run_here(pipelines, control, "r1", tmp_path / "d", spark)
        assert again[0] == 0, again[1]
        assert undisturbed[0] == 0, undisturbed[1]
        marks, state, rows, runs = _state(name)
        assert marks == 3 and state == 1
        _, _, control_rows, control_runs = _state(control)
        assert rows == control_rows
        assert runs[0][1] == control_runs[0][1]
        assert runs[0][1]["duplicated"] == truth.counts["duplicated"]
    finally:
        remove_run("at_least_once", tag)
        with results_db() as pg:
            forget_pipeline(pg, name)
            forget_pipeline(pg, control)
