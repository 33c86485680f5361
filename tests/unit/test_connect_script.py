"""scripts/connect.sh tells a dead worker from a running one: a SIGKILLed worker whose parent
never reaps it stays a zombie, which ``kill -0`` still finds; the script must call that stopped,
or ``start`` says "already running" and the worker stays down (as it did after a scenario killed
it and asked for a restart)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "connect.sh"


def _status(state: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RECON_STATE": str(state)}
    return subprocess.run(
        ["bash", str(SCRIPT), "status"], capture_output=True, text=True, env=env, timeout=30
    )


def test_a_zombie_worker_is_stopped_and_a_live_one_running(tmp_path: Path) -> None:
    (tmp_path / "connect").mkdir()
    pidfile = tmp_path / "connect" / "connect.pid"
    # A child that exits and is not waited for: a zombie until this test reaps it.
    zombie = subprocess.Popen(["true"])
    live = subprocess.Popen(["sleep", "30"])
    try:
        reads = 0
        while Path(f"/proc/{zombie.pid}/stat").read_text().split()[2] != "Z":
            reads += 1
            assert reads < 10_000, "the child never exited"
        pidfile.write_text(f"{zombie.pid}\n")
        done = _status(tmp_path)
        assert (done.returncode, done.stdout.strip()) == (3, "Kafka Connect stopped")
        pidfile.write_text(f"{live.pid}\n")
        done = _status(tmp_path)
        assert done.returncode == 0 and "running" in done.stdout, done
    finally:
        live.kill()
        live.wait()
        zombie.wait()
