"""The Kafka broker killed while a run takes its offset snapshot, and while the window is read:
by Spark, and by the local engine's reader processes.

The broker is first frozen (SIGSTOP) so the run is provably waiting on it, then killed (SIGKILL)
and started again. Whatever the run then does (finish after the broker is back, or fail), nothing
partial is visible, and the pipeline ends with the verdicts of an undisturbed run.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from faultkit import (
    assert_nothing_committed,
    rerun_equals_undisturbed,
    snapshot_recorded,
    start_recon_run,
    synthetic,
    wait_for,
)
from kill_switches import freeze_kafka, kill_kafka, local_reader_pid, start_kafka

from recon.read.kafka_local.pool import IN_PROCESS_OFFSETS

# It kills, restarts or locks a service every test shares: it runs alone (scripts/test.sh).
pytestmark = [pytest.mark.integration, pytest.mark.serial]

EXIT_CONTRACT_BROKEN = 1  # the synthetic pipeline loses messages: at_least_once is broken


def _finished_after_fault(victim: Any, name: str) -> bool:
    """Whether the disturbed run committed; if not, it left nothing behind."""
    code, err = victim.finish()
    print(f"disturbed run: exit {code}\n{err[-3000:]}")
    if code == EXIT_CONTRACT_BROKEN:
        return True
    assert_nothing_committed(name)
    return False


@pytest.mark.parametrize(
    ("phase", "engine"),
    # The offset snapshot is one step shared by both engines; the window read is not.
    [("offset_snapshot", "spark"), ("window_read", "spark"), ("window_read", "local")],
)
def test_broker_killed(
    phase: str,
    engine: str,
    tmp_path: Path,
    kafka_config: dict[str, str],
    pg_kwargs: dict[str, Any],
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The re-run and the control of a Spark window read run on the test session's Spark (no
    # driver JVM of their own), those of the offset snapshot on the local engine (below); the
    # disturbed run is a `recon run` process of its own.
    on_spark = (engine, phase) == ("spark", "window_read")
    spark = request.getfixturevalue("spark") if on_spark else None
    name, control = f"kafka_killed_{phase}_{engine}", f"kafka_killed_{phase}_{engine}_control"
    # The window read must outlast the moment the broker is frozen: a hundred thousand records,
    # past IN_PROCESS_OFFSETS on the local engine, whose reader processes are the ones frozen.
    n = 100_000 if engine == "spark" else IN_PROCESS_OFFSETS + 50_000
    if phase == "offset_snapshot":
        n = 2_000
    if on_spark:
        # Spark's tasks read the window, as they read any window past the driver's bound: the
        # driver reads one this small with the local engine's reader (its frozen read is the
        # local variant's), in about a second, before the freeze takes hold.
        monkeypatch.setenv("RECON_SPARK_DRIVER_READ", "0")
    with synthetic(kafka_config, pg_kwargs, n, name, control, pending=40) as s:
        pipelines = tmp_path / "pipelines.yaml"
        pipelines.write_text(s.pipelines_yaml(name, control, engine=engine))
        data = tmp_path / "data"
        window_done = data / "windows" / name / "r1" / "committed" / "_SUCCESS"
        victim = start_recon_run(pipelines, name, "r1", data)
        try:
            if phase == "offset_snapshot":
                # Past the pre-flight checks the run starts Spark, then takes the snapshot.
                wait_for(
                    "Spark to start", lambda: victim.said("Spark's default log4j"), alive=victim
                )
                pid = freeze_kafka()
                try:
                    wait_for("the Spark session", lambda: victim.said("setLogLevel"), alive=victim)
                    # The run now asks a frozen broker for offsets: no snapshot can be recorded.
                    time.sleep(3)
                    assert victim.poll() is None
                    assert not snapshot_recorded(name, "r1")
                finally:
                    kill_kafka(pid)
            else:
                if engine == "local":
                    # The readers fetch 300k records in about two seconds: freeze as one starts.
                    wait_for("a Kafka reader process",
                             lambda: local_reader_pid(victim.proc.pid) is not None,
                             alive=victim)  # fmt: skip
                else:
                    wait_for("the run's snapshot", lambda: snapshot_recorded(name, "r1"),
                             alive=victim)  # fmt: skip
                pid = freeze_kafka()
                try:
                    assert not window_done.exists(), "the window was read before the broker froze"
                    time.sleep(5)
                    assert not window_done.exists()
                finally:
                    kill_kafka(pid)
        finally:
            # Whatever failed above, the broker every later test shares comes back.
            start_kafka()
        finished = _finished_after_fault(victim, name)
        if phase == "offset_snapshot":
            # The disturbed step is the one both engines share: the re-run and the control go
            # on the local engine (a pipeline moves between engines freely), which spares the
            # serial tests two Spark runs; the disturbed run was on Spark for its driver's start,
            # the moment the broker is frozen in.
            pipelines.write_text(s.pipelines_yaml(name, control, engine="local"))
        rerun_equals_undisturbed(pipelines, name, control, data, s.expected,
                                 rerun=None if finished else "r1", spark=spark)  # fmt: skip
