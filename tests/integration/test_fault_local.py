"""Faults that meet the local engine (``engine: local``) only: a Kafka reader process killed
while it reads the window (PostgreSQL restarted mid-commit is in ``test_fault_postgres``, for
both engines).

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
    rerun_equals_undisturbed,
    start_recon_run,
    synthetic,
    wait_for,
)
from kill_switches import local_reader_pid

from recon.read.kafka_local.pool import IN_PROCESS_OFFSETS

pytestmark = pytest.mark.integration

EXIT_ERROR = 2


def test_a_killed_reader_fails_the_run_in_one_line_and_its_rerun_is_undisturbed(
    tmp_path: Path, kafka_config: dict[str, str], pg_kwargs: dict[str, Any]
) -> None:
    name, control = "local_reader_killed", "local_reader_killed_control"
    # Past IN_PROCESS_OFFSETS: read by reader processes, one of which is killed.
    with synthetic(kafka_config, pg_kwargs, IN_PROCESS_OFFSETS + 50_000, name, control,
                   pending=30) as s:  # fmt: skip
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
