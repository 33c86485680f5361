"""Faults that meet the local engine (``engine: local``): a Kafka reader process killed while it
reads the window, and PostgreSQL restarted while the run commits its results.

The run must end with one clear line, no traceback and nothing committed; running the same run
id again then gives the verdicts of an undisturbed run of the same data.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from faultkit import (
    assert_nothing_committed,
    local_reader_pid,
    rerun_equals_undisturbed,
    restart_postgres,
    start_recon_run,
    stored,
    synthetic,
    wait_for,
    watermark_writes_held,
)
from test_fault_postgres import _commit_waiting_on_watermarks

pytestmark = pytest.mark.integration

EXIT_ERROR = 2


def test_a_killed_reader_fails_the_run_in_one_line_and_its_rerun_is_undisturbed(
    tmp_path: Path, kafka_config: dict[str, str], pg_kwargs: dict[str, Any]
) -> None:
    name, control = "local_reader_killed", "local_reader_killed_control"
    with synthetic(kafka_config, pg_kwargs, 200_000, name, control, pending=30) as s:
        pipelines = tmp_path / "pipelines.yaml"
        pipelines.write_text(s.pipelines_yaml(name, control, engine="local"))
        data = tmp_path / "data"
        victim = start_recon_run(pipelines, name, "r1", data)
        reader: list[int] = []

        def found() -> bool:
            pid = local_reader_pid(victim.proc.pid)
            if pid is not None:
                reader.append(pid)
            return pid is not None

        wait_for("a Kafka reader process", found, timeout=120, alive=victim)
        time.sleep(0.2)  # inside its read, not its start
        os.kill(reader[0], signal.SIGKILL)

        code, err = victim.finish()
        assert code == EXIT_ERROR, f"exit {code}: {err[-3000:]}"
        assert "Traceback" not in err, err[-3000:]
        assert f"pipeline '{name}': a Kafka reader process died" in err, err[-3000:]
        assert_nothing_committed(name)
        # Nothing half-written is visible as the run's window.
        assert not (data / "windows" / name / "r1").exists()

        rerun_equals_undisturbed(pipelines, name, control, data, s.expected)


def test_postgres_restarted_during_a_local_engine_commit(
    tmp_path: Path, kafka_config: dict[str, str], pg_kwargs: dict[str, Any]
) -> None:
    name, control = "local_pg_restarted", "local_pg_restarted_control"
    with synthetic(kafka_config, pg_kwargs, 3_000, name, control, pending=20) as s:
        pipelines = tmp_path / "pipelines.yaml"
        pipelines.write_text(s.pipelines_yaml(name, control, engine="local"))
        data = tmp_path / "data"
        with watermark_writes_held():
            victim = start_recon_run(pipelines, name, "r1", data)
            wait_for(
                "the run's commit to reach its watermark write",
                lambda: _commit_waiting_on_watermarks(name),
                alive=victim,
            )
            seen = stored(name)
            assert seen.discrepancies == [], "uncommitted result rows are visible"
            assert seen.watermarks == [] and seen.state_run is None
            restart_postgres("immediate")
        code, err = victim.finish()
        assert code == EXIT_ERROR, f"exit {code}: {err[-3000:]}"
        assert "Traceback" not in err, err[-3000:]
        assert "run it again with the same run id" in err, err[-3000:]
        assert_nothing_committed(name)

        rerun_equals_undisturbed(pipelines, name, control, data, s.expected)
