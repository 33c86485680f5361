"""``engine: spark`` runs attached to the project's Spark Connect server (``RECON_SPARK_REMOTE``,
``scripts/spark-connect.sh``) instead of a JVM of their own: ``recon run`` judges every message as
the test wrote it, the run is a session of the server's, a client the server refuses stops at
once with one line that names the server, a server killed mid-run is named as the lost driver
(nothing committed, the re-run gives the undisturbed verdicts), a ledger compacted on the
server (in a second session of its own, stopped after) still knows every earlier message, and
a session's Python processes leave the server once idle (``recon.spark.daemon``) while the
session can still run Python."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from everyday_kit import (
    EXIT_CONTRACT_BROKEN,
    EXIT_ERROR,
    Setup,
    commit_group,
    ids,
    no_traceback,
    parse_summary,
    produce,
    same,
    tail,
    write_rows,
)
from faultkit import (
    assert_nothing_committed,
    start_recon_run,
    synthetic,
    wait_for,
)
from fixtures.spark_connect import restart, running_server, server_environ, server_pid, sessions

pytestmark = pytest.mark.integration


#: The server's Python daemons leave 2 s after their last worker (not 60): the idle check's
#: setting, the server's from its start, so that test need not restart it (a start: 9 s here).
#: A run's daemons outlive it (Spark closes idle workers after a minute): the idle check watches
#: its own session's processes only.
IDLE_DAEMONS = {"RECON_SPARK_PYTHON_IDLE": "2"}


@pytest.fixture(scope="module")
def connect_server() -> Iterator[str]:
    """The project's Spark Connect server (left running if it was)."""
    with running_server(IDLE_DAEMONS) as url:
        yield url


#: ``recon run`` with a ledger compacted at every run (COMPACT_AFTER 1): compaction reads the
#: ledger in a session of its own, which on Spark Connect is a second session of the server's.
COMPACTING_RUN = (
    "import sys\n"
    "from recon.ledger import versions\n"
    "versions.COMPACT_AFTER = 1\n"
    "from recon.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def test_runs_attached_to_the_server_judge_each_message_and_compact_the_ledger(
    kit_setup: Callable[..., Setup],
    kafka_config: dict[str, str],
    connect_server: str,
    spark: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Also: a session's Python processes leave the server once idle (``recon.spark.daemon``),
    while the session can still run Python. Its client runs Python in the server first; Spark
    closes an idle worker after a minute, which passes while the runs judge."""
    if server_environ().get("RECON_SPARK_PYTHON_IDLE") != IDLE_DAEMONS["RECON_SPARK_PYTHON_IDLE"]:
        restart(IDLE_DAEMONS)  # a server that was running before this module, with its own
    monkeypatch.setenv("RECON_SPARK_REMOTE", connect_server)
    with python_in_the_server() as idle:
        _judge_each_message_and_compact_the_ledger(kit_setup("spark", "connect"), kafka_config,
                                                   spark)  # fmt: skip
        idle.leaves_and_comes_back()


def _judge_each_message_and_compact_the_ledger(
    s: Setup, kafka_config: dict[str, str], spark: Any
) -> None:
    def run(run_id: str) -> subprocess.CompletedProcess[str]:
        result = s.cli(run_id, runner=("-c", COMPACTING_RUN))
        no_traceback(result, run_id)
        return result

    delivered, lost = ids("m", 0, 6), ids("m", 6, 8)
    where = produce(kafka_config, s.topic, delivered + lost)
    write_rows(s.pg_kwargs, s.table, delivered, where)
    write_rows(s.pg_kwargs, s.table, ["m2"], where)  # the consumer wrote m2 twice
    write_rows(s.pg_kwargs, s.table, ["ghost"])  # a row no record stands for
    commit_group(kafka_config, s.group, s.topic)

    before = sessions()
    result = run("run-1")
    assert result.returncode == EXIT_CONTRACT_BROKEN, (result.returncode, tail(result.stderr))
    summary = parse_summary(result, "run 1 over Spark Connect")
    counts = {v: n for v, n in summary["counts"].items() if n}
    assert counts == {"delivered": 5, "duplicated": 1, "lost": 2, "phantom": 1}, counts
    want = {**dict.fromkeys(delivered, "delivered"), "m2": "duplicated",
            **dict.fromkeys(lost, "lost"), "ghost": "phantom"}  # fmt: skip
    same(want, s.verdicts(spark, "run-1"), "run 1 over Spark Connect")
    assert sorted(m for v, m, _ in s.discrepancies("run-1") if v == "lost") == lost
    assert s.run_row("run-1", "status, contract_passed") == ("failed", False)
    # The run was a session of the server's, not a Spark of its own.
    assert sessions() - before, "the server's log names no new session"

    # Run 2 has new messages and compacts its ledger (its base and its own entries into one),
    # which must still hold every message of run 1 as run 1 judged it.
    second = ids("b", 0, 5)
    where = produce(kafka_config, s.topic, second)
    write_rows(s.pg_kwargs, s.table, second, where)
    commit_group(kafka_config, s.group, s.topic)
    summary = parse_summary(run("run-2"), "run 2 over Spark Connect")
    assert summary["counts"]["delivered"] == 5, summary["counts"]
    manifest = s.ledger_path()
    assert manifest is not None
    entries = [json.loads(line)["entry"] for part in Path(manifest).glob("part-*")
               for line in part.read_text().splitlines() if line.strip()]  # fmt: skip
    assert len(entries) == 1 and "-compacted-" in entries[0], entries
    kept = {r.message_id: r.verdict for r in spark.read.parquet(entries[0]).collect()}
    same({**want, **dict.fromkeys(second, "delivered")}, kept, "the compacted ledger")


def test_a_client_the_server_refuses_stops_with_one_line(
    kit_setup: Callable[..., Setup],
    kafka_config: dict[str, str],
    connect_server: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s = kit_setup("spark", "refused")
    where = produce(kafka_config, s.topic, ids("m", 0, 2))
    write_rows(s.pg_kwargs, s.table, ids("m", 0, 2), where)
    commit_group(kafka_config, s.group, s.topic)
    monkeypatch.setenv("RECON_SPARK_REMOTE", connect_server)
    monkeypatch.setenv("SPARK_CONNECT_AUTHENTICATE_TOKEN", "not-the-servers-token")
    result = s.cli("run-1", timeout=120)
    no_traceback(result, "a refused client")
    assert result.returncode == EXIT_ERROR, (result.returncode, tail(result.stderr))
    assert (
        f"the Spark Connect server at {connect_server} refused the session: "
        "Invalid authentication token"
    ) in result.stderr, tail(result.stderr)
    assert "not-the-servers-token" not in result.stdout + result.stderr
    assert s.run_row("run-1") is None  # nothing started, nothing committed


def test_a_server_killed_mid_run_is_named_and_nothing_is_committed(
    tmp_path: Path,
    kafka_config: dict[str, str],
    pg_kwargs: dict[str, Any],
    connect_server: str,
    spark: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    name = "connect_killed"
    # A run over 10,000 messages still judges for seconds after its window is written.
    with synthetic(kafka_config, pg_kwargs, 10_000, name, pending=30) as s:
        pipelines = tmp_path / "pipelines.yaml"
        pipelines.write_text(s.pipelines_yaml(name))
        data = tmp_path / "data"
        monkeypatch.setenv("RECON_SPARK_REMOTE", connect_server)
        victim = start_recon_run(pipelines, name, "r1", data)
        wait_for("the window", lambda: victim.said("window written to"), alive=victim)
        try:
            os.kill(server_pid(), signal.SIGKILL)  # the server's JVM, as a crash leaves it
            code, err = victim.finish(timeout=300)
        finally:
            restart(IDLE_DAEMONS)  # the next tests of this module attach to it again
        assert code == EXIT_ERROR, f"exit {code}: {err[-3000:]}"
        assert "Traceback" not in err, err[-3000:]
        assert (
            f"pipeline '{name}': the Spark Connect server at {connect_server} went away during "
            "run 'r1'"
        ) in err, err[-3000:]
        # A re-run of the same run id giving the undisturbed verdicts is test_fault_spark.py's
        # (the classic driver killed): the run and its commit are the same code.
        assert_nothing_committed(name)


#: A client of the server that runs Python in it (an Arrow map: the server's Python worker and
#: daemon) when told to on its stdin, twice, in one session.
PYTHON_IN_THE_SERVER = (
    "import os, sys\n"
    "import pyarrow as pa\n"
    "from recon.spark import remote_session\n"
    "def double(batches):\n"
    "    for b in batches:\n"
    "        yield pa.RecordBatch.from_pydict({'n': [v * 2 for v in b.column(0).to_pylist()]})\n"
    "session = remote_session('python-idle', os.environ['RECON_SPARK_REMOTE'])\n"
    "for line in sys.stdin:\n"
    "    rows = session.range(5).mapInArrow(double, 'n long').collect()\n"
    "    print(sorted(r.n for r in rows), flush=True)\n"
    "session.stop()\n"
)


def _python_processes() -> dict[int, str]:
    """The server's Python processes, each with the ``SPARK_JOB_ARTIFACT_UUID`` of the session
    whose worker factory started it (a Connect session's daemon and workers carry its own)."""
    found: dict[int, str] = {}
    for proc in psutil.Process(server_pid()).children(recursive=True):
        try:
            if b"python" in os.path.basename(proc.cmdline()[0]).encode():
                found[proc.pid] = proc.environ().get("SPARK_JOB_ARTIFACT_UUID", "")
        except (psutil.Error, IndexError):
            continue  # gone meanwhile
    return found


class IdleSession:
    """A client session that ran Python in the server once (``PYTHON_IN_THE_SERVER``)."""

    def __init__(self, client: subprocess.Popen[str], artifacts: str) -> None:
        self.client = client
        self.artifacts = artifacts

    def run_python(self) -> None:
        assert self.client.stdin is not None and self.client.stdout is not None
        self.client.stdin.write("go\n")
        self.client.stdin.flush()
        assert self.client.stdout.readline().strip() == "[0, 2, 4, 6, 8]"

    def leaves_and_comes_back(self) -> None:
        # Spark closes a factory's idle workers after a minute; the daemon follows in 2 s.
        wait_for("the session's Python processes to leave the server",
                 lambda: self.artifacts not in _python_processes().values(),
                 timeout=150)  # fmt: skip
        # The same session again: Spark finds its daemon gone and starts another.
        self.run_python()
        assert self.client.stdin is not None
        self.client.stdin.close()
        code = self.client.wait(timeout=60)
        assert code == 0, self.client.stderr.read()[-3000:] if self.client.stderr else ""


@contextlib.contextmanager
def python_in_the_server() -> Iterator[IdleSession]:
    """A client session that ran Python in the server, its processes there named by their
    session (``SPARK_JOB_ARTIFACT_UUID``): those of other sessions come and go meanwhile."""
    before = _python_processes()
    client = subprocess.Popen(
        [sys.executable, "-c", PYTHON_IN_THE_SERVER], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        session = IdleSession(client, "")
        session.run_python()
        started = {u for pid, u in _python_processes().items() if pid not in before}
        # The session's daemon and worker, both of its session's factory.
        assert len(started) == 1 and "" not in started, started
        (session.artifacts,) = started
        yield session
    finally:
        client.kill()
        client.wait()
