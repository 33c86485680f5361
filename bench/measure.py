"""Run a command as a child process and measure its wall time and peak memory.

Memory is the resident set (RSS) of the whole process tree, sampled every 100 ms with psutil,
split into JVM processes (Spark's driver, which in local mode is also the executor) and the rest
(Python). Extra process ids (a standalone cluster's workers and their executors) can be watched
beside the child.
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


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def _rss(procs: list[psutil.Process]) -> tuple[float, float]:
    jvm = other = 0.0
    for p in procs:
        try:
            rss = p.memory_info().rss
            if p.name() == "java":
                jvm += rss
            else:
                other += rss
        except psutil.Error:
            continue
    return jvm / 2**20, other / 2**20


def run(cmd: Sequence[str], watch: Sequence[int] = (), env: dict[str, str] | None = None,
        timeout: float = 1800) -> Measured:  # fmt: skip
    """Run ``cmd``; its last stdout line that parses as JSON becomes ``output``.

    :raises RuntimeError: the command failed (its stderr tail is in the message).
    """
    start = time.monotonic()
    proc = subprocess.Popen(
        list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    peaks = {"all": 0.0, "jvm": 0.0, "py": 0.0, "watched": 0.0}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            jvm, py = _rss(_tree(proc.pid))
            watched = sum(_rss([q for w in watch for q in _tree(w)]))
            peaks["all"] = max(peaks["all"], jvm + py)
            peaks["jvm"] = max(peaks["jvm"], jvm)
            peaks["py"] = max(peaks["py"], py)
            peaks["watched"] = max(peaks["watched"], watched)
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
                    round(peaks["py"]), round(peaks["watched"]), output)  # fmt: skip
