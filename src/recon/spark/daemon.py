"""The Python daemon of the product's Spark Connect server: pyspark's own daemon
(``pyspark.daemon``), which also exits once it has had no worker for a while.

Spark starts one daemon per Python worker factory, and on a Connect server each session has a
factory of its own (its key holds the session's ``SPARK_JOB_ARTIFACT_UUID``). Spark 4.1 never
stops a factory before the server stops (SPARK-54055): its idle workers it closes after a minute,
but its daemon, a Python process of some 55 MB, stays. A server that Airflow runs attach to for
weeks gathers one or two daemons per run (sixteen, 868 MB, after one ``make bench``).

This daemon, once no worker of its own has lived for :func:`recon.settings.spark_python_idle`
seconds, closes its listening socket and exits. A session that later needs a worker finds the
daemon gone and Spark starts another ("Assuming that daemon unexpectedly quit, attempting to
restart", a warning in the server's log): a connection that reached the closed socket is reset,
which is that path too, so no task is lost to the exit. Run by Spark as
``python -m recon.spark.daemon <worker module>`` (``spark.python.daemon.module``).
"""

from __future__ import annotations

import os
import select
import socket
import sys
import time
from collections.abc import Callable
from typing import Any


def has_children(pid: int) -> bool:
    """Whether process ``pid`` has a live child (read from ``/proc``)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        return any(_read(f"/proc/{pid}/task/{t}/children").strip() for t in tasks)
    except OSError:
        # A kernel without the children files: a scan of every process's parent.
        return any(_parent(p) == pid for p in os.listdir("/proc") if p.isdigit())


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _parent(pid: str) -> int | None:
    try:
        return int(_read(f"/proc/{pid}/stat").rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


class IdleExit:
    """Stands in for the ``select`` module in pyspark's daemon loop: its ``select`` is the real
    one, and after :attr:`idle_seconds` of wait with no child it closes the listening socket
    (the connections it has not accepted are reset) and raises ``SystemExit``; the daemon's own
    ``finally`` then shuts it down as it does when Spark stops it.

    :param idle_seconds: how long the daemon may stay without a child.
    :param busy: whether the daemon has a live child.
    :param clock: seconds, monotonic.
    """

    error = select.error

    def __init__(
        self,
        idle_seconds: float,
        busy: Callable[[], bool],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.idle_seconds = idle_seconds
        self._busy = busy
        self._clock = clock
        self._since = clock()

    def select(self, rlist: list[Any], wlist: list[Any], xlist: list[Any], timeout: float) -> Any:
        ready = select.select(rlist, wlist, xlist, timeout)
        if any(ready) or self._busy():
            self._since = self._clock()
        elif self._clock() - self._since >= self.idle_seconds:
            for listening in rlist:
                if isinstance(listening, socket.socket):
                    listening.close()
            raise SystemExit(0)
        return ready


def main() -> None:
    """pyspark's daemon loop, with :class:`IdleExit` as its ``select``."""
    import importlib

    from recon import settings

    # pyspark's daemon imports the worker module named on its command line at import.
    daemon: Any = importlib.import_module("pyspark.daemon")
    pid = os.getpid()
    daemon.select = IdleExit(settings.spark_python_idle(), lambda: has_children(pid))
    daemon.manager()


if __name__ == "__main__":
    main()
    sys.exit(0)
