"""Runs a consumer process to completion, SIGKILLing it at chosen crash windows and restarting it.

The child blocks at every crash window until told to go (see :mod:`recon_workload.protocol`), so
each kill lands exactly between the child's two side effects. Which windows are fatal is drawn
from a seeded generator, with one forced kill so that even a small run shows the fault.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from recon_workload.errors import WorkloadError
from recon_workload.progress import Progress
from recon_workload.protocol import BATCH, DONE, GO, HOLD, READY, WINDOW


@dataclass
class KillPlan:
    """Which crash windows end in SIGKILL.

    :param rate: probability that any one window is fatal.
    :param seed: seeds the draw.
    :param force_at: kill at this window (1-based) if nothing was killed yet; 0 never forces.
    :param max_kills: no more kills after this many (each costs a process start).
    """

    rate: float = 0.0
    seed: int = 0
    force_at: int = 0
    max_kills: int = 4
    windows: int = 0
    kills: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def fatal(self) -> bool:
        """Called at each window; ``True`` means kill now."""
        self.windows += 1
        if len(self.kills) >= self.max_kills:
            return False
        roll = self._rng.random() < self.rate
        forced = self.force_at > 0 and self.windows >= self.force_at and not self.kills
        if roll or forced:
            self.kills.append(self.windows)
            return True
        return False

    @property
    def enabled(self) -> bool:
        return self.rate > 0 or self.force_at > 0


@dataclass
class Supervised:
    """What happened to one supervised stage."""

    processed: int = 0
    starts: int = 0
    kills: list[int] = field(default_factory=list)


def supervise(
    module: str,
    spec_json: str,
    plan: KillPlan,
    progress: Progress,
    label: str,
    timeout: float = 120.0,
    on_hold: Callable[[], None] | None = None,
    on_ready: Callable[[], None] | None = None,
) -> Supervised:
    """Run ``python -m module spec_json`` until it finishes cleanly, killing it per ``plan``.

    :param module: ``recon_workload.consumer`` or ``recon_workload.processor``.
    :param label: names the stage in progress lines.
    :param timeout: the whole stage, restarts included.
    :param on_hold: called when the child stops at a hold point (its sink transaction open); the
        child commits once it returns. Without it, the child goes on at once.
    :param on_ready: called when the child says it is fetching (each start of it); must not
        block, the child does not wait for it.
    :raises WorkloadError: when the child fails on its own or the stage overruns.
    """
    out = Supervised()
    deadline = time.monotonic() + timeout

    def tick(message: str) -> None:
        progress.tick(f"{label}: {message}")

    while True:
        out.starts += 1
        with tempfile.TemporaryFile(mode="w+") as errfile:
            proc = subprocess.Popen(
                [sys.executable, "-m", module, spec_json],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=errfile,
                text=True,
                bufsize=1,
            )
            # A child that hangs prints nothing, so the deadline needs its own timer.
            watchdog = threading.Timer(max(deadline - time.monotonic(), 0.1), proc.kill)
            watchdog.start()
            try:
                done, killed = _drive(proc, plan, out, tick, on_hold, on_ready)
            finally:
                watchdog.cancel()
            rc = proc.wait()
            if time.monotonic() > deadline:
                raise WorkloadError(f"{label} did not finish within {timeout:.0f} s")
            if done and rc == 0:
                return out
            if killed:
                progress.step(f"{label}: SIGKILL at crash window {plan.windows}; restarting")
                continue
            errfile.seek(0)
            tail = errfile.read()[-3000:]
            raise WorkloadError(f"{label} process exited with {rc} unexpectedly:\n{tail}")


def _drive(
    proc: subprocess.Popen[str],
    plan: KillPlan,
    out: Supervised,
    tick: Callable[[str], None],
    on_hold: Callable[[], None] | None = None,
    on_ready: Callable[[], None] | None = None,
) -> tuple[bool, bool]:
    """Answer the child's protocol lines until it ends; return (finished cleanly, killed)."""
    assert proc.stdout is not None and proc.stdin is not None
    for line in proc.stdout:
        word, _, arg = line.strip().partition(" ")
        if word == WINDOW:
            if plan.fatal():
                _kill(proc)
                out.kills.append(plan.windows)
                return False, True
            proc.stdin.write(GO + "\n")
            proc.stdin.flush()
        elif word == HOLD:
            if on_hold is not None:
                on_hold()
            proc.stdin.write(GO + "\n")
            proc.stdin.flush()
        elif word == READY:
            if on_ready is not None:
                on_ready()
        elif word == BATCH:
            out.processed += int(arg)
            tick(f"{out.processed} records processed")
        elif word == DONE:
            return True, False
    return False, False


def _kill(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
