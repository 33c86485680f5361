"""The services' kill switches of the fault-matrix tests: the Kafka broker frozen, killed and
started again, PostgreSQL restarted, and the real reader or driver process a run started."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from faultkit import ROOT, STATE
from proc_tree import find_process

from recon.read.kafka_local.pool import READER_MODULE


def kafka_pid() -> int:
    return int((STATE / "kafka" / "kafka.pid").read_text().strip())


def freeze_kafka() -> int:
    """Stop the broker in its tracks (SIGSTOP): requests in flight hang, none is answered."""
    pid = kafka_pid()
    os.kill(pid, signal.SIGSTOP)
    return pid


def kill_kafka(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    raise AssertionError(f"the Kafka broker (pid {pid}) survived SIGKILL")


def start_kafka() -> None:
    result = subprocess.run(["bash", str(ROOT / "scripts" / "kafka.sh"), "start"],
                            capture_output=True, text=True, timeout=240)  # fmt: skip
    assert result.returncode == 0, f"Kafka did not come back: {result.stderr[-1500:]}"


def restart_postgres(mode: str = "immediate") -> None:
    result = subprocess.run(["bash", str(ROOT / "scripts" / "postgres.sh"), "restart", mode],
                            capture_output=True, text=True, timeout=240)  # fmt: skip
    assert result.returncode == 0, f"PostgreSQL did not come back: {result.stderr[-1500:]}"


def local_reader_pid(parent: int) -> int | None:
    """A Kafka reader process of the local engine below process ``parent``, if one runs."""
    reader = READER_MODULE.encode()  # ``python -m recon.read.kafka_local``
    return find_process(parent, lambda argv: reader in argv)


def spark_driver_pid(parent: int) -> int | None:
    """The Spark driver JVM that pyspark launched below process ``parent``, if it runs."""

    def is_driver(argv: list[bytes]) -> bool:
        cmdline = b"\0".join(argv)
        return b"java" in cmdline and b"org.apache.spark.deploy.SparkSubmit" in cmdline

    return find_process(parent, is_driver)
