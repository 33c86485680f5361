"""Runs Airflow's four components (api-server, scheduler, dag-processor, triggerer) and restarts any
that exits, as systemd or Kubernetes would in production.

``airflow standalone`` starts the same four but never restarts one: a dag-processor that dies on a
dropped metadata-database connection (PostgreSQL restarted) stays dead, and new DAGs never appear.
Output lines are prefixed with the component's name, like ``standalone``'s. SIGTERM stops all four.

usage: airflow_supervisor.py  (run by scripts/airflow.sh start, in its own process group)
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from types import FrameType

COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")
#: The scheduler's and triggerer's log servers bind every interface (Airflow hard-codes it) and
#: serve nothing here: the api-server reads the task logs from this machine's files.
SKIP_LOG_SERVER = {"scheduler": ("--skip-serve-logs",), "triggerer": ("--skip-serve-logs",)}
MAX_BACKOFF_SECONDS = 30.0
STABLE_AFTER_SECONDS = 60.0  # a component that ran this long restarts at once the next time
STOP_GRACE_SECONDS = 30.0

_print_lock = threading.Lock()


def say(name: str, line: str) -> None:
    with _print_lock:
        sys.stdout.write(f"{name:<13} | {line.rstrip()}\n")
        sys.stdout.flush()


class Component:
    """One ``airflow <name>`` process, restarted with a growing delay while it keeps failing."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.process: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.backoff = 1.0
        self.restart_at: float | None = None
        self.restarts = 0

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["airflow", self.name, *SKIP_LOG_SERVER.get(self.name, ())],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self.started_at = time.monotonic()
        self.restart_at = None
        threading.Thread(target=self._pump, args=(self.process,), daemon=True).start()

    def _pump(self, process: subprocess.Popen[bytes]) -> None:
        assert process.stdout is not None
        for raw in process.stdout:
            say(self.name, raw.decode("utf-8", "replace"))

    def check(self, now: float) -> None:
        """Notice an exit and schedule the restart; restart when its time has come."""
        if self.restart_at is not None:
            if now >= self.restart_at:
                self.restarts += 1
                say("supervisor", f"restarting {self.name} (restart {self.restarts})")
                self.start()
            return
        assert self.process is not None
        code = self.process.poll()
        if code is None:
            return
        ran = now - self.started_at
        if ran >= STABLE_AFTER_SECONDS:
            self.backoff = 1.0
        else:
            self.backoff = min(self.backoff * 2, MAX_BACKOFF_SECONDS)
        self.restart_at = now + self.backoff
        say(
            "supervisor",
            f"{self.name} exited with code {code} after {ran:.0f} s; "
            f"restarting in {self.backoff:.0f} s",
        )

    def terminate(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()

    def wait_or_kill(self, deadline: float) -> None:
        if self.process is None:
            return
        try:
            self.process.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def main() -> int:
    stopping = threading.Event()

    def stop(signum: int, _frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    components = [Component(name) for name in COMPONENTS]
    say("supervisor", f"starting {', '.join(COMPONENTS)}")
    for component in components:
        component.start()
    while not stopping.wait(1.0):
        now = time.monotonic()
        for component in components:
            component.check(now)
    say("supervisor", "stopping")
    for component in components:
        component.terminate()
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    for component in components:
        component.wait_or_kill(deadline)
    say("supervisor", "stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
