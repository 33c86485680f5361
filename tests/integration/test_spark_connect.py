"""``engine: spark`` runs attached to the project's Spark Connect server (``RECON_SPARK_REMOTE``,
``scripts/spark-connect.sh``) instead of a JVM of their own: ``recon run`` judges every message as
the test wrote it, the run is a session of the server's, and a client the server refuses stops at
once with one line that names the server."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from everyday_kit import (
    EXIT_CONTRACT_BROKEN,
    EXIT_ERROR,
    REPO,
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

pytestmark = pytest.mark.integration

SCRIPT = str(REPO / "scripts" / "spark-connect.sh")
SERVER_LOG = Path(os.environ.get("RECON_STATE", REPO / ".state")) / "spark-connect" / "server.log"


@pytest.fixture(scope="module")
def connect_server() -> Iterator[str]:
    """The project's Spark Connect server, started for these tests unless it was running (then
    left running)."""
    running = subprocess.run(["bash", SCRIPT, "status"], capture_output=True).returncode == 0
    started = subprocess.run(["bash", SCRIPT, "start"], capture_output=True, text=True,
                             timeout=240)  # fmt: skip
    assert started.returncode == 0, tail(started.stdout + started.stderr)
    yield f"sc://localhost:{os.environ['RECON_SPARK_CONNECT_PORT']}"
    if not running:
        subprocess.run(["bash", SCRIPT, "stop"], capture_output=True, timeout=120)


def _sessions() -> set[str]:
    """The session ids the server's log names so far."""
    return set(re.findall(r"sessionId: ([0-9a-f-]{36})", SERVER_LOG.read_text(errors="replace")))


def test_a_run_attached_to_the_server_judges_each_message(
    kit_setup: Callable[..., Setup],
    kafka_config: dict[str, str],
    connect_server: str,
    spark: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s = kit_setup("spark", "connect")
    delivered, lost = ids("m", 0, 6), ids("m", 6, 8)
    where = produce(kafka_config, s.topic, delivered + lost)
    write_rows(s.pg_kwargs, s.table, delivered, where)
    write_rows(s.pg_kwargs, s.table, ["m2"], where)  # the consumer wrote m2 twice
    write_rows(s.pg_kwargs, s.table, ["ghost"])  # a row no record stands for
    commit_group(kafka_config, s.group, s.topic)

    before = _sessions()
    monkeypatch.setenv("RECON_SPARK_REMOTE", connect_server)
    result = s.cli("run-1")
    no_traceback(result, "run 1 over Spark Connect")
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
    assert _sessions() - before, "the server's log names no new session"


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
