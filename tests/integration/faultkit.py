"""Shared by the fault-matrix tests: a synthetic pipeline with hand-computed verdicts, `recon run`
as a subprocess, and the stored state of a pipeline (the services' kill switches:
``kill_switches``).

The synthetic pipeline is what a consumer with known faults leaves behind: ``n`` JSON records
spread over partitions, the consumer group committed at ``n - pending`` records, and a sink table
that misses every ``lost_every``-th committed message and holds every ``dup_every``-th twice.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import psycopg2
from fixtures.pipelines import SYNTHETIC_PIPELINE

from recon.run.steps import RunSummary, results_db
from recon.store import ensure_schema, forget_pipeline

ROOT = Path(os.environ.get("RECON_ROOT", Path(__file__).resolve().parents[2]))
STATE = Path(os.environ.get("RECON_STATE", ROOT / ".state"))


@dataclass(frozen=True)
class Synthetic:
    """A topic, a committed consumer group and a sink table with known verdicts."""

    topic: str
    group: str
    table: str
    expected: dict[str, int]

    def pipelines_yaml(
        self, *names: str, kafka_conn: str = "kafka_default", engine: str = "spark"
    ) -> str:
        blocks = [
            SYNTHETIC_PIPELINE.format(name=n, topic=self.topic, group=self.group,
                                      table=self.table, kafka_conn=kafka_conn, engine=engine)
            for n in names
        ]  # fmt: skip
        return "pipelines:" + "".join(blocks)


def message_id(i: int) -> str:
    return f"m{i:08d}"


def make_synthetic(
    kafka_config: dict[str, str],
    pg_kwargs: dict[str, Any],
    n: int,
    *,
    partitions: int = 4,
    pending: int = 0,
    lost_every: int = 50,
    dup_every: int = 70,
) -> Synthetic:
    """Produce ``n`` records, commit the group, fill the sink; return the expected verdicts."""
    from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    tag = uuid.uuid4().hex[:10]
    topic, group, table = f"fault-{tag}", f"fault-g-{tag}", f"fault_{tag}"
    admin = AdminClient(kafka_config)
    admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic].result(timeout=30)
    producer = Producer({**kafka_config, "linger.ms": 20, "enable.idempotence": True})
    ends = [0] * partitions
    committed_ids: list[str] = []
    for i in range(n):
        p = i % partitions
        mid = message_id(i)
        value = json.dumps({"id": mid, "pad": "x" * 60}).encode()
        try:
            producer.produce(topic, value, partition=p)
        except BufferError:
            producer.flush(30)
            producer.produce(topic, value, partition=p)
        ends[p] += 1
        if i < n - pending:
            committed_ids.append(mid)
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(60) != 0:
        raise RuntimeError(f"records for {topic} were not all delivered")
    # Offsets committed for the first n - pending records, partition by partition.
    commit = [0] * partitions
    for i in range(n - pending):
        commit[i % partitions] += 1
    offsets = [TopicPartition(topic, p, commit[p]) for p in range(partitions)]
    request = ConsumerGroupTopicPartitions(group, offsets)
    admin.alter_consumer_group_offsets([request])[group].result(timeout=30)

    lost = {m for k, m in enumerate(committed_ids) if k % lost_every == lost_every - 1}
    dups = {m for k, m in enumerate(committed_ids) if k % dup_every == dup_every - 1} - lost
    rows = io.StringIO()
    for mid in committed_ids:
        if mid not in lost:
            rows.write(f"{mid}\n" * (2 if mid in dups else 1))
    rows.seek(0)
    with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(
            f"CREATE TABLE public.{table} (id bigserial PRIMARY KEY, message_id text NOT NULL)"
        )
        cur.copy_expert(f"COPY public.{table} (message_id) FROM STDIN", rows)
    expected = {
        "delivered": len(committed_ids) - len(lost) - len(dups),
        "lost": len(lost),
        "duplicated": len(dups),
        "pending": pending,
    }
    return Synthetic(topic, group, f"public.{table}", expected)


def drop_synthetic(kafka_config: dict[str, str], pg_kwargs: dict[str, Any], s: Synthetic) -> None:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(kafka_config)  # kept referenced: its futures die with it
    for future in admin.delete_topics([s.topic]).values():
        future.result(timeout=30)
    with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {s.table}")


@contextmanager
def synthetic(
    kafka_config: dict[str, str], pg_kwargs: dict[str, Any], n: int, *names: str, **kw: Any
) -> Iterator[Synthetic]:
    """A synthetic pipeline for the test's pipeline names, removed with their results after."""
    with results_db() as pg:  # a fresh results database: the test reads it before any run
        ensure_schema(pg)
    s = make_synthetic(kafka_config, pg_kwargs, n, **kw)
    try:
        yield s
    finally:
        with results_db() as pg:
            for name in names:
                forget_pipeline(pg, name)
        drop_synthetic(kafka_config, pg_kwargs, s)


# --- running the product ------------------------------------------------------------------------


def recon_command(pipelines: Path, name: str, run_id: str, data_dir: Path) -> list[str]:
    return ["recon", "--pipelines", str(pipelines), "run", "--pipeline", name,
            "--run-id", run_id, "--data-dir", str(data_dir), "--json"]  # fmt: skip


def recon_run(
    pipelines: Path, name: str, run_id: str, data_dir: Path, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(recon_command(pipelines, name, run_id, data_dir),
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip


def recon_run_here(
    pipelines: Path, name: str, run_id: str, data_dir: Path, spark: Any
) -> tuple[int, RunSummary]:
    """`recon run` in the test's own process: the same steps (the pre-flight checks, then
    ``run_pipeline``), a Spark pipeline on the test session's Spark: no driver JVM to start, no
    imports, a warm JVM (a `recon run` process of the Spark engine took 30-60 s here, the same
    run in process a few seconds). Returns the exit status `recon run` gives the summary (0 when
    the contract holds, 1 when it is broken; its alerts are not sent) and the summary.

    For the runs a test makes undisturbed (a control, the re-run after a fault): what happens to
    the `recon run` process itself (killed, its driver killed, its one-line errors) is tested
    on the disturbed run, which stays a process of its own."""
    from recon.config import load_pipelines
    from recon.run.steps import needs_spark, run_pipeline
    from recon.stack.preflight import check_pipeline

    cfg = load_pipelines(pipelines)[name]
    check_pipeline(cfg)
    summary = run_pipeline(cfg, run_id, spark if needs_spark(cfg) else None,
                           data_dir=str(data_dir))  # fmt: skip
    return (0 if summary.contract_passed else EXIT_CONTRACT_BROKEN), summary


class RunningRecon:
    """A `recon run` in its own process group, its stderr collected line by line."""

    def __init__(self, pipelines: Path, name: str, run_id: str, data_dir: Path) -> None:
        self.proc = subprocess.Popen(
            recon_command(pipelines, name, run_id, data_dir), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, args=(self.proc.stderr,), daemon=True)
        self._reader.start()

    def _read(self, stderr: IO[str]) -> None:
        for line in stderr:
            self.lines.append(line)

    def poll(self) -> int | None:
        return self.proc.poll()

    def said(self, text: str) -> bool:
        return any(text in line for line in list(self.lines))

    def finish(self, timeout: float = 600) -> tuple[int, str]:
        self.proc.wait(timeout=timeout)
        self._reader.join(timeout=30)
        if self.proc.stdout is not None:
            self.proc.stdout.read()
        return self.proc.returncode, "".join(self.lines)


def start_recon_run(pipelines: Path, name: str, run_id: str, data_dir: Path) -> RunningRecon:
    return RunningRecon(pipelines, name, run_id, data_dir)


def wait_for(what: str, predicate: Callable[[], bool], timeout: float = 300,
             alive: RunningRecon | None = None) -> None:  # fmt: skip
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        if alive is not None and alive.poll() is not None:
            code, err = alive.finish()
            raise AssertionError(f"the run ended (exit {code}) before {what}: {err[-1500:]}")
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def snapshot_recorded(name: str, run_id: str) -> bool:
    with results_db() as pg, pg.cursor() as cur:
        cur.execute("SELECT 1 FROM recon.runs WHERE pipeline = %s AND run_id = %s "
                    "AND snapshot_at IS NOT NULL", (name, run_id))  # fmt: skip
        return cur.fetchone() is not None


# --- what a pipeline has stored -----------------------------------------------------------------


@dataclass(frozen=True)
class Stored:
    """Everything of one pipeline that a reader can see, run ids left out where they differ."""

    runs: list[tuple[str, str, dict[str, int]]]  # run id, status, counts
    watermarks: list[tuple[str, int, int, int | None, str]]
    state_run: str | None
    discrepancies: list[tuple[Any, ...]]

    @property
    def committed_counts(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for _, status, counts in self.runs:
            if status in ("passed", "failed"):
                for k, v in counts.items():
                    total[k] = total.get(k, 0) + v
        return {k: v for k, v in total.items() if v}

    def comparable(self) -> tuple[Any, ...]:
        marks = [(t, p, n, c) for t, p, n, c, _ in self.watermarks]
        return self.committed_counts, marks, self.discrepancies


def stored(name: str) -> Stored:
    with results_db() as pg, pg.cursor() as cur:
        cur.execute("SELECT run_id, status, counts FROM recon.runs WHERE pipeline = %s "
                    "ORDER BY run_id", (name,))  # fmt: skip
        runs = [(r, s, dict(c or {})) for r, s, c in cur.fetchall()]
        cur.execute(
            "SELECT topic, partition, next_offset, committed_offset, run_id "
            "FROM recon.watermarks WHERE pipeline = %s ORDER BY topic, partition",
            (name,),
        )
        marks = cur.fetchall()
        cur.execute("SELECT run_id FROM recon.pipeline_state WHERE pipeline = %s", (name,))
        row = cur.fetchone()
        cur.execute(
            "SELECT verdict, message_id, topic, partition, offsets::text, first_offset, "
            "sink_keys::text, sink_count, topic_duplicate, detail FROM recon.discrepancies "
            "WHERE pipeline = %s ORDER BY 1, 2, 3, 4, 5",
            (name,),
        )
        rows = cur.fetchall()
    return Stored(runs, marks, row[0] if row else None, rows)


def assert_nothing_committed(name: str) -> None:
    s = stored(name)
    assert s.watermarks == [], f"watermarks advanced without results: {s.watermarks}"
    assert s.state_run is None, f"pipeline state moved to run {s.state_run}"
    assert s.discrepancies == [], f"{len(s.discrepancies)} result rows visible"
    assert all(status not in ("passed", "failed") for _, status, _ in s.runs), s.runs


def assert_same_as_undisturbed(name: str, control: str, expected: dict[str, int]) -> None:
    """Verdicts, result rows and watermarks equal the control's; each message judged once."""
    victim, undisturbed = stored(name), stored(control)
    assert victim.committed_counts == {k: v for k, v in expected.items() if v}, victim.runs
    assert victim.comparable() == undisturbed.comparable()
    per_message = [(r[1], r[0]) for r in victim.discrepancies if r[1] is not None]
    assert len(per_message) == len(set(per_message)), "a message was counted twice"


# --- holding a commit, comparing with an undisturbed run -----------------------------------------

EXIT_CONTRACT_BROKEN = 1  # the synthetic pipeline loses messages: at_least_once is broken


@contextmanager
def watermark_writes_held() -> Iterator[Any]:
    """A session holding a SHARE lock on ``recon.watermarks``: readers pass, a run's commit stops
    at its first watermark write, after its result rows. Commit the yielded connection to let go."""
    with results_db() as blocker:
        with blocker.cursor() as cur:
            cur.execute("LOCK TABLE recon.watermarks IN SHARE MODE")
        yield blocker


def rerun_equals_undisturbed(
    pipelines: Path, name: str, control: str, data: Path, expected: dict[str, int],
    *, rerun: str | None = "r1", spark: Any = None,
) -> None:  # fmt: skip
    """Run ``rerun`` of the disturbed pipeline again (``None``: it already was), run the control
    undisturbed, and compare everything they stored.

    :param spark: the test session's Spark: both runs go in this process (``recon_run_here``)
        rather than as `recon run` processes, each of which would start a driver JVM."""
    if spark is not None:
        if rerun is not None:
            code, summary = recon_run_here(pipelines, name, rerun, data, spark)
            assert code == EXIT_CONTRACT_BROKEN, summary
        code, summary = recon_run_here(pipelines, control, "r1", data, spark)
        assert code == EXIT_CONTRACT_BROKEN, summary
        assert_same_as_undisturbed(name, control, expected)
        return
    if rerun is not None:
        again = recon_run(pipelines, name, rerun, data)
        assert again.returncode == EXIT_CONTRACT_BROKEN, again.stderr[-2000:]
    undisturbed = recon_run(pipelines, control, "r1", data)
    assert undisturbed.returncode == EXIT_CONTRACT_BROKEN, undisturbed.stderr[-2000:]
    assert_same_as_undisturbed(name, control, expected)
