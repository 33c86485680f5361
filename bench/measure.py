"""Run a command as a child process and measure its wall time and peak memory.

Memory is the proportional set size (PSS) of the whole process tree, sampled every 100 ms,
split into JVM processes (Spark's driver, which in local mode is also the executor) and the rest
(Python). Extra process ids (a standalone cluster's workers and their executors) can be watched
beside the child. (The ``peak_rss_mb`` key keeps its name for results kept from earlier runs.)

PSS, not RSS: pages shared between processes count once in the sum. With RSS a process forked
from another counts every page of its parent again: pyspark's Python workers (forked from its
daemon), and any child a JVM starts, which until its ``exec`` has the JVM's whole memory. One
such child (a Spark thread starting a command) was caught by the sampler in two of three 1M
Spark runs on 2026-11-28 and counted the 1.8 GB JVM twice (4.4-4.5 GB instead of 2.7 GB).

A process's PSS is not read every 100 ms (:class:`PssSampler`): the kernel walks every page
table of the process to sum it, and for the Spark Connect server's JVM (2.7 GB resident) a read
of ``smaps_rollup`` took 46 ms (2026-11-30, during a bench), so ten a second kept one of the two
cores about half busy with the measurement and held the JVM's memory-map lock while its own
threads faulted pages in.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import psutil


@dataclass
class Measured:
    seconds: float
    peak_rss_mb: float
    peak_jvm_mb: float
    peak_python_mb: float
    peak_watched_mb: float
    output: dict[str, Any] = field(default_factory=dict)
    #: The most the ``spill`` folder held during the run (0: none given, or nothing spilled).
    peak_spill_mb: float = 0.0


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _pss_bytes(p: psutil.Process) -> int:
    """The process's PSS (``/proc/<pid>/smaps_rollup``: one line, but the kernel walks the
    process's page tables to sum it); its RSS where the kernel has no such file."""
    try:
        with open(f"/proc/{p.pid}/smaps_rollup", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(p.memory_info().rss)


#: A process's PSS is read again once its RSS moved by more than this fraction since the last
#: read, or this many seconds passed; in between it is its RSS (``/proc/<pid>/statm``, read in
#: microseconds) times the last read's PSS/RSS ratio.
REREAD_CHANGE = 0.03
REREAD_SECONDS = 2.0


class PssSampler:
    """Each process's PSS at every sample, read from the kernel only when it may have changed:
    a process first seen is read at once (a child forked from a JVM shares the JVM's pages: its
    RSS would count them again), then again when its RSS moved by more than
    :data:`REREAD_CHANGE` or :data:`REREAD_SECONDS` passed."""

    def __init__(self) -> None:
        #: pid -> (when read, RSS then, PSS/RSS then)
        self._read: dict[int, tuple[float, int, float]] = {}
        #: How many times the kernel's sum was read (for the tests).
        self.reads = 0

    def pss_bytes(self, p: psutil.Process) -> float:
        rss = int(p.memory_info().rss)
        now = time.monotonic()
        last = self._read.get(p.pid)
        if (last is not None and now - last[0] < REREAD_SECONDS
                and abs(rss - last[1]) <= REREAD_CHANGE * last[1]):  # fmt: skip
            return rss * last[2]
        pss = _pss_bytes(p)
        self.reads += 1
        self._read[p.pid] = (now, rss, pss / rss if rss else 1.0)
        return float(pss)


def _memory(procs: list[psutil.Process], sampler: PssSampler) -> tuple[float, float]:
    """The processes' memory (:meth:`PssSampler.pss_bytes`) in MiB: the JVMs', the others'."""
    jvm = other = 0.0
    for p in procs:
        try:
            size = sampler.pss_bytes(p)
            if p.name() == "java":
                jvm += size
            else:
                other += size
        except psutil.Error:
            continue
    return jvm / 2**20, other / 2**20


def _folder_bytes(path: str) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except OSError:  # a spill file removed between the listing and the stat
                continue
    return total


def run(cmd: Sequence[str], watch: Sequence[int] = (), env: dict[str, str] | None = None,
        timeout: float = 1800, spill: str | None = None) -> Measured:  # fmt: skip
    """Run ``cmd``; its last stdout line that parses as JSON becomes ``output``.

    :param spill: a folder the command spills to (the local engine's DuckDB spill folder): its
        size is sampled with the memory, its peak reported.

    :raises RuntimeError: the command failed (its stderr tail is in the message).
    """
    start = time.monotonic()
    proc = subprocess.Popen(
        list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    peaks = {"all": 0.0, "jvm": 0.0, "py": 0.0, "watched": 0.0, "spill": 0.0}
    done = threading.Event()
    pss = PssSampler()

    def sample() -> None:
        while not done.is_set():
            jvm, py = _memory(_tree(proc.pid), pss)
            watched = sum(_memory([q for w in watch for q in _tree(w)], pss))
            peaks["all"] = max(peaks["all"], jvm + py)
            peaks["jvm"] = max(peaks["jvm"], jvm)
            peaks["py"] = max(peaks["py"], py)
            peaks["watched"] = max(peaks["watched"], watched)
            if spill is not None:
                peaks["spill"] = max(peaks["spill"], _folder_bytes(spill) / 2**20)
            done.wait(0.1)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        done.set()
        sampler.join()
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        tail = "\n".join(err.strip().splitlines()[-25:])
        raise RuntimeError(f"{' '.join(cmd[:4])} ... exited {proc.returncode}:\n{tail}")
    output: dict[str, Any] = {}
    for line in reversed(out.strip().splitlines()):
        try:
            output = json.loads(line)
            break
        except ValueError:
            continue
    return Measured(round(seconds, 3), round(peaks["all"]), round(peaks["jvm"]),
                    round(peaks["py"]), round(peaks["watched"]), output,
                    round(peaks["spill"]))  # fmt: skip
