"""The Spark Connect server's Python daemon (``recon.spark.daemon``): pyspark's daemon, which
exits once it has had no worker for its idle time, and not while a worker lives; its listening
socket closed first, so a late connection is refused or reset (Spark then starts another
daemon), never accepted and dropped."""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from recon.spark import daemon as spark_daemon
from recon.spark.daemon import IdleExit, has_children

pytestmark = pytest.mark.unit


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def test_the_daemon_exits_after_its_idle_time_and_closes_its_socket_first(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    listening, _ = pair
    spark_end, ours = os.pipe()  # the daemon's stdin, where Spark names workers to kill
    clock, busy = Clock(), [False]
    idle = IdleExit(10, lambda: busy[0], clock)
    try:
        clock.now = 9.9
        assert idle.select([spark_end, listening], [], [], 0) == ([], [], [])
        assert listening.fileno() != -1
        clock.now = 10.0
        with pytest.raises(SystemExit):
            idle.select([spark_end, listening], [], [], 0)
        assert listening.fileno() == -1  # closed
    finally:
        os.close(spark_end)
        os.close(ours)


def test_a_live_worker_or_a_ready_socket_restarts_the_idle_time(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    listening, other_end = pair
    clock, busy = Clock(), [True]
    idle = IdleExit(10, lambda: busy[0], clock)
    clock.now = 50.0
    idle.select([listening], [], [], 0)  # a worker lives at 50
    busy[0] = False
    clock.now = 59.0
    idle.select([listening], [], [], 0)
    other_end.send(b"x")
    clock.now = 68.0
    assert idle.select([listening], [], [], 0)[0] == [listening]  # activity at 68
    listening.recv(1)
    clock.now = 77.0
    idle.select([listening], [], [], 0)
    clock.now = 78.0
    with pytest.raises(SystemExit):
        idle.select([listening], [], [], 0)


@pytest.mark.parametrize("children_files", [True, False], ids=["children-files", "scan"])
def test_has_children_sees_a_live_child_only(
    children_files: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the kernel's children files, and without them (a kernel built without
    CONFIG_PROC_CHILDREN: every process's parent read instead)."""
    if not children_files:
        read = spark_daemon._read

        def no_children_files(path: str) -> str:
            if path.endswith("/children"):
                raise FileNotFoundError(path)
            return read(path)

        monkeypatch.setattr(spark_daemon, "_read", no_children_files)
    parent = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys; subprocess.Popen(['sleep', '30']);"
         "sys.stdin.read()"],
        stdin=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while not has_children(parent.pid):
            assert time.monotonic() < deadline, "the child never showed"
            time.sleep(0.05)
    finally:
        os.killpg(parent.pid, signal.SIGKILL)  # the parent and its sleeping child
        parent.wait()
    lone = subprocess.Popen(["sleep", "30"])
    try:
        assert not has_children(lone.pid)
    finally:
        lone.kill()
        lone.wait()


def _start_daemon(idle: str) -> tuple[subprocess.Popen[bytes], int]:
    env = {
        **os.environ,
        "RECON_SPARK_PYTHON_IDLE": idle,
        "PYTHON_WORKER_FACTORY_SECRET": "s3cret",
        "SPARK_REUSE_WORKER": "1",
    }
    daemon = subprocess.Popen(
        [sys.executable, "-m", "recon.spark.daemon", "pyspark.worker"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
    )  # fmt: skip
    assert daemon.stdout is not None
    (port,) = struct.unpack("!i", daemon.stdout.read(4))
    return daemon, port


def _refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def test_the_real_daemon_waits_for_its_worker_then_exits_and_refuses() -> None:
    daemon, port = _start_daemon("1")
    try:
        conn = socket.create_connection(("127.0.0.1", port), timeout=10)
        (worker_pid,) = struct.unpack("!i", conn.recv(4))  # the forked worker says its pid
        assert worker_pid > 0
        time.sleep(3)  # three idle times: the worker, waiting for Spark's secret, holds it
        assert daemon.poll() is None
        conn.close()  # the worker reads end of file and exits
        assert daemon.wait(timeout=15) is not None
        assert _refused(port)
    finally:
        daemon.kill()
        daemon.wait()


def test_a_daemon_told_to_wait_forever_stays() -> None:
    daemon, _ = _start_daemon("inf")
    try:
        time.sleep(2.5)
        assert daemon.poll() is None
        assert daemon.stdin is not None
        daemon.stdin.close()  # as Spark stops a daemon: pyspark's own shutdown
        assert daemon.wait(timeout=15) is not None
    finally:
        daemon.kill()
        daemon.wait()
