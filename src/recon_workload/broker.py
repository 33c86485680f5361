"""Bouncing the project's broker for real: ``scripts/kafka.sh stop`` then ``start``."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from recon_workload.errors import WorkloadError


def _script() -> Path:
    root = os.environ.get("RECON_ROOT")
    if not root:
        raise WorkloadError("RECON_ROOT is not set: run through scripts/with-env.sh")
    return Path(root) / "scripts" / "kafka.sh"


def _run(action: str) -> None:
    proc = subprocess.run(
        ["bash", str(_script()), action], capture_output=True, text=True, timeout=180
    )
    if proc.returncode != 0:
        raise WorkloadError(f"kafka.sh {action} failed:\n{proc.stdout}{proc.stderr}")


def bounce(down_seconds: float = 0.0, while_down: Callable[[], None] | None = None) -> float:
    """Stop the broker, optionally stay down a while, start it again; return seconds taken.

    Whatever happens, the broker is started again before this returns or raises: other work
    shares it.

    :param down_seconds: extra time to stay down after the stop completed.
    :param while_down: called once the broker is stopped, before it starts again.
    """
    began = time.monotonic()
    try:
        _run("stop")
        if while_down is not None:
            while_down()
        time.sleep(down_seconds)
    finally:
        _run("start")
    return time.monotonic() - began
