"""The Spark engine attached to a long-lived Spark Connect server (``RECON_SPARK_REMOTE``): the
project's server (``scripts/spark-connect.sh``), started for the bench unless it was running,
warmed by one untimed run (a user's server has run before; its first run pays the JIT that every
fresh JVM pays), stopped after if the bench started it, even when the bench is killed."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

from bench import script


@dataclass(frozen=True)
class Server:
    """A running server: where runs attach (``url``) and its process, whose memory the bench
    counts with each run's (``pid``)."""

    url: str
    pid: int

    @property
    def env(self) -> dict[str, str]:
        return {"RECON_SPARK_REMOTE": self.url}


@contextlib.contextmanager
def server() -> Iterator[Server]:
    """The project's Spark Connect server for the bench's runs."""
    running = script("spark-connect.sh", "status").returncode == 0
    started = script("spark-connect.sh", "start")
    if started.returncode != 0:
        raise RuntimeError(f"the Spark Connect server did not start: {started.stderr[-2000:]}")
    pidfile = os.path.join(os.environ["RECON_STATE"], "spark-connect", "server.pid")
    with open(pidfile, encoding="utf-8") as fh:
        pid = int(fh.read().strip())
    watcher = None if running else _stop_when_gone(os.getpid())
    try:
        yield Server(os.environ["RECON_SPARK_CONNECT_URL"], pid)
    finally:
        if watcher is not None:
            watcher.kill()
            watcher.wait()
            script("spark-connect.sh", "stop")


def _stop_when_gone(bench_pid: int) -> subprocess.Popen[bytes]:
    """A watcher that stops the server once the bench's process is gone without stopping it
    (the kernel's OOM killer ended one bench: its server kept port 23150, and the next test run's
    Spark Connect tests could not start theirs)."""
    stop = os.path.join(os.environ["RECON_ROOT"], "scripts", "spark-connect.sh")
    watch = f'while kill -0 {bench_pid} 2>/dev/null; do sleep 2; done; exec bash "$0" stop'
    return subprocess.Popen(["bash", "-c", watch, stop], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
