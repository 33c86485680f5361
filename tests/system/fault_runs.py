"""A reconciliation DAG run under the real scheduler whose ``reconcile`` task is SIGKILLed
mid-step on its first try and succeeds on its retry: shared (session scope) by the fault tests,
which go on to clear it, and by the secret-leak test, which searches everything it left.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import dagrun_kit as kit
import psutil
import pytest
from fixtures.pipelines import DAG_DIR_PIPELINE

from recon.run.steps import results_db
from recon.store import forget_pipeline
from recon_workload import ScenarioResult, remove_run, run_scenario
from recon_workload.names import RunNames

SCENARIO = "at_least_once"
MESSAGES = 150
KILLED_TASK = "reconcile"


@dataclass
class RetriedRun:
    """The DAG run, the ground truth of its data, and what was seen between the kill and the
    retry."""

    pipeline: str
    dag_id: str
    run_id: str
    truth: ScenarioResult
    airflow: kit.Airflow
    killed_pids: list[int]
    after_kill: dict[str, Any] = field(default_factory=dict)
    #: sockets the project's processes listened on beyond loopback while the run ran
    exposed: list[str] = field(default_factory=list)
    #: how many times the listening sockets were listed during the run
    listings: int = 0


def _project_process(pid: int | None, root: str) -> str | None:
    """The command line of ``pid`` when it is one of the project's (Airflow's components and
    children, Spark drivers and the JVMs with the checkout's jars, Kafka, PostgreSQL)."""
    if pid is None:
        return None
    try:
        cmd = " ".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        return None
    return cmd if cmd.startswith("airflow") or root in cmd else None


def _loopback(ip: str) -> bool:
    """Loopback, also as an IPv4-mapped IPv6 address (``::ffff:127.0.0.1``, as Java binds)."""
    address = ipaddress.ip_address(ip.split("%", 1)[0])
    mapped = getattr(address, "ipv4_mapped", None)
    return bool(address.is_loopback or (mapped is not None and mapped.is_loopback))


class ListenerWatch:
    """Lists the listening TCP sockets every 0.2 s in a thread, and keeps every one that a
    process of the project opened on an address other than loopback."""

    def __init__(self) -> None:
        self.root = os.environ.get("RECON_ROOT", os.getcwd())
        self.exposed: set[str] = set()
        self.listings = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="listener-watch", daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(0.2):
            for conn in psutil.net_connections(kind="tcp"):
                if conn.status != psutil.CONN_LISTEN or not conn.laddr:
                    continue
                if _loopback(conn.laddr.ip):
                    continue
                cmd = _project_process(conn.pid, self.root)
                if cmd is not None:
                    self.exposed.add(f"{conn.laddr.ip}:{conn.laddr.port} by {cmd[:160]}")
            self.listings += 1

    def __enter__(self) -> ListenerWatch:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def spark_step_processes(pipeline: str, step: str) -> list[psutil.Process]:
    """The spark-submit JVM of one step of this pipeline's run (``--name recon-<p>-<step>``)."""
    wanted = f"recon-{pipeline}-{step}"
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info["cmdline"] or []
        if "org.apache.spark.deploy.SparkSubmit" in cmd and wanted in cmd:
            found.append(proc)
    return found


def _db_now() -> datetime:
    return kit.query("SELECT now()")[0][0]  # type: ignore[no-any-return]


def _why_not_judging(airflow: kit.Airflow, dag_id: str, run_id: str) -> str:
    """What a timed-out wait saw: each task's state, the run's row, the scheduler's last lines."""
    try:
        states = {t: ti["state"] for t, ti in airflow.task_instances(dag_id, run_id).items()}
    except Exception as exc:  # the report must not hide the timeout itself
        states = {"(task instances unreadable)": repr(exc)}
    row = kit.query("SELECT status, started_at FROM recon.runs WHERE run_id = %s", run_id)
    return (
        f"tasks: {states}; recon.runs: {row}; logs: {kit.task_log_dir(dag_id, run_id)}\n"
        f"scheduler:\n{kit.log_tail('scheduler')}\ndag-processor:\n{kit.log_tail()}"
    )


def kill_when_judging(
    airflow: kit.Airflow, pipeline: str, run_id: str, timeout: float = 420
) -> list[int]:
    """SIGKILL the reconcile step once it has started judging (it marks the run `running` again
    when it starts, and its results commit is several seconds of Spark work later)."""
    deadline = time.monotonic() + timeout
    seen_at: datetime | None = None
    while time.monotonic() < deadline:
        procs = spark_step_processes(pipeline, KILLED_TASK)
        if procs and seen_at is None:
            seen_at = _db_now()
        if procs and seen_at is not None:
            started = kit.query(
                "SELECT started_at, status FROM recon.runs WHERE pipeline = %s AND run_id = %s",
                pipeline,
                run_id,
            )
            if started and started[0][0] >= seen_at:
                assert started[0][1] == "running", f"the run already ended: {started[0]}"
                victims = [p for proc in procs for p in (proc, *proc.children(recursive=True))]
                for victim in victims:
                    with contextlib.suppress(psutil.NoSuchProcess):
                        victim.send_signal(signal.SIGKILL)
                psutil.wait_procs(victims, timeout=30)
                return [v.pid for v in victims]
        time.sleep(0.2)
    raise AssertionError(
        f"the {KILLED_TASK} step of {pipeline}/{run_id} never started judging within "
        f"{timeout:.0f} s (its JVM seen: {seen_at is not None}); "
        + _why_not_judging(airflow, f"recon_{pipeline}", run_id)
    )


def wait_task_state(
    airflow: kit.Airflow, dag_id: str, run_id: str, task: str, want: str, timeout: float = 120
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ti = airflow.task_instances(dag_id, run_id).get(task)
        if ti and ti["state"] == want:
            return ti
        time.sleep(1)
    raise AssertionError(f"{dag_id}/{run_id}: task {task} is not {want} after {timeout:.0f} s")


@pytest.fixture(scope="session")
def retried_run(airflow_url: str) -> Iterator[RetriedRun]:
    tag = uuid.uuid4().hex[:6]
    names = RunNames(SCENARIO, tag)
    pipeline = f"faults_retry_{tag}"
    dag_id, run_id = f"recon_{pipeline}", f"faults__retried_{tag}"
    text = DAG_DIR_PIPELINE.format(
        name=pipeline, engine="spark", semantics="at_least_once", schedule="null",
        topic=names.topic(), group=names.group(), table=names.qualified_table,
        tolerances="{max_duplicate_ratio: 1.0}", retries=1,
    )  # fmt: skip
    airflow = kit.Airflow(airflow_url)
    try:
        # Declared first: the dag-processor parses the file while the workload runs.
        with kit.declared(pipeline, text):
            truth = run_scenario(SCENARIO, messages=MESSAGES, run_tag=tag, progress=False)
            assert truth.counts["duplicated"] > 0, truth.summary  # else nothing to double-count
            airflow.wait_for_dag(dag_id)
            with ListenerWatch() as watch:
                airflow.trigger(dag_id, run_id)
                killed = kill_when_judging(airflow, pipeline, run_id)
                run = RetriedRun(pipeline, dag_id, run_id, truth, airflow, killed)
                # Between the kill and the retry (30 s later): what a reader of recon.* would see.
                run.after_kill = {
                    "runs": kit.runs(pipeline),
                    "watermarks": kit.watermarks(pipeline),
                    "discrepancies": kit.discrepancies(pipeline),
                    "state": kit.query(
                        "SELECT run_id FROM recon.pipeline_state WHERE pipeline = %s", pipeline
                    ),
                    "ti": wait_task_state(airflow, dag_id, run_id, KILLED_TASK, "up_for_retry"),
                }
                final = airflow.wait_run(dag_id, run_id, timeout=600)
            run.exposed, run.listings = sorted(watch.exposed), watch.listings
            logs = kit.task_log_dir(dag_id, run_id)
            assert final["state"] == "success", f"the run ended {final['state']}: see {logs}"
            yield run
    finally:
        remove_run(SCENARIO, tag)
        with results_db() as pg:
            forget_pipeline(pg, pipeline)


def group_offsets(truth: ScenarioResult, partitions: int = 3) -> dict[int, int]:
    """The consumer group's committed offset per partition, now."""
    from recon_workload.kafka_io import base_config, committed_offsets

    found = committed_offsets(base_config(), truth.consumer_group, truth.topic, partitions)
    assert all(v is not None for v in found.values()), found
    return {p: int(v) for p, v in found.items() if v is not None}


def environment_secrets() -> dict[str, str]:
    """Every secret the stack holds (.state/secrets.env) by name, the connections' passwords, and
    the long segments of an ``http`` connection's ``endpoint`` (a webhook's token is its path)."""
    import json

    secrets = {}
    for name in ("RECON_PG_PASSWORD", "RECON_AIRFLOW_ADMIN_PASSWORD",
                 "AIRFLOW__API_AUTH__JWT_SECRET", "AIRFLOW__API__SECRET_KEY"):  # fmt: skip
        value = os.environ.get(name, "")
        assert len(value) >= 8, f"{name} is unset or too short to search for: run `make setup`"
        secrets[name] = value
    for name, value in os.environ.items():
        if name.startswith("AIRFLOW_CONN_") and value.startswith("{"):
            conn = json.loads(value)
            if conn.get("password"):
                secrets[f"{name}.password"] = conn["password"]
            endpoint = str((conn.get("extra") or {}).get("endpoint") or "")
            for i, segment in enumerate(s for s in endpoint.split("/") if len(s) >= 16):
                secrets[f"{name}.endpoint[{i}]"] = segment
    return secrets
