"""A Spark standalone cluster on this machine, from pyspark's own classes: one master, N workers.

Each process runs in its own process group and is stopped by its group id when the block ends;
nothing else is touched. Ports: ``RECON_BENCH_SPARK_PORT`` (master, default 23077) and the next
ones for the web UIs.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class Cluster:
    master_url: str
    ui_url: str
    master_pid: int
    worker_pids: list[int] = field(default_factory=list)


def _start(args: list[str], log: str) -> subprocess.Popen[bytes]:
    import pyspark

    # pyspark's own Spark, whatever $SPARK_HOME says: the cluster runs the driver's classes.
    home = os.path.dirname(pyspark.__file__)
    env = {**os.environ, "SPARK_HOME": home,
           "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_NO_DAEMONIZE": "1"}  # fmt: skip
    with open(log, "ab") as out:
        spark_class = os.path.join(home, "bin", "spark-class")
        return subprocess.Popen([spark_class, *args], stdout=out, stderr=subprocess.STDOUT,
                                env=env, start_new_session=True)  # fmt: skip


def _alive_workers(ui_url: str) -> int:
    try:
        with urllib.request.urlopen(f"{ui_url}/json/", timeout=2) as resp:
            return int(json.load(resp).get("aliveworkers", 0))
    except (OSError, ValueError):
        return 0


@contextlib.contextmanager
def standalone(workers: int = 2, cores: int = 1, memory: str = "2g") -> Iterator[Cluster]:
    from bench.generate import state_dir

    port = int(os.environ.get("RECON_BENCH_SPARK_PORT", "23077"))
    logs = os.path.join(state_dir(), "cluster")
    os.makedirs(logs, exist_ok=True)
    procs = [_start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                     "--port", str(port), "--webui-port", str(port + 1)],
                    os.path.join(logs, "master.log"))]  # fmt: skip
    master = f"spark://127.0.0.1:{port}"
    cluster = Cluster(master, f"http://127.0.0.1:{port + 1}", procs[0].pid)
    try:
        for i in range(workers):
            proc = _start(["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                           "--webui-port", str(port + 2 + i), "--cores", str(cores),
                           "--memory", memory, "--work-dir", os.path.join(logs, f"work{i}"),
                           master], os.path.join(logs, f"worker{i}.log"))  # fmt: skip
            procs.append(proc)
            cluster.worker_pids.append(proc.pid)
        deadline = time.monotonic() + 120
        while _alive_workers(cluster.ui_url) < workers:
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                raise RuntimeError(f"the Spark cluster did not come up: see {logs}")
            time.sleep(1)
        yield cluster
    finally:
        for proc in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
