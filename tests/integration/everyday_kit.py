"""A small kit for the everyday-verdict tests: our own producers, consumer-group commits, sink
writers and result readers, independent of the workload's scenarios.

Everything a test makes here is tiny (a few messages, one partition, one table) and named
uniquely; :class:`Setup` drops what it made.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg2
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from fixtures.pipelines import WORKLOAD_PIPELINE
from kafka_ends import high_watermarks, last_stable_offsets

from recon.config import PipelineConfig, load_pipelines
from recon.ledger import local_segments, membership
from recon.run.paths import ledger_dir
from recon.run.steps import results_db, results_path
from recon.store import ensure_schema, forget_pipeline

REPO = Path(__file__).resolve().parents[2]
ENGINES = ("spark", "local")
EXIT_OK, EXIT_CONTRACT_BROKEN, EXIT_ERROR = 0, 1, 2
Verdicts = dict[str, str]


# --- Kafka: producing and committing ------------------------------------------------------------


def _delivered(positions: dict[str, tuple[int, int]], failures: list[str]) -> Any:
    def report(err: Any, msg: Any) -> None:
        # The key is the messageId (delivery reports do not always carry the headers).
        if err is None:
            positions[msg.key().decode()] = (msg.partition(), msg.offset())
        else:
            failures.append(str(err))

    return report


def send(producer: Producer, topic: str, ids: Iterable[str], partition: int = 0) -> None:
    """Send one record per id (header ``message_id``, key = id) to ``partition``; no flush."""
    for mid in ids:
        producer.produce(topic, key=mid.encode(), value=f'{{"id": "{mid}"}}'.encode(),
                         partition=partition, headers=[("message_id", mid.encode())])  # fmt: skip
        producer.poll(0)


def produce(kafka_config: Mapping[str, str], topic: str, ids: Iterable[str],
            partition: int = 0) -> dict[str, tuple[int, int]]:  # fmt: skip
    """Produce and flush, non-transactionally; ``(partition, offset)`` by messageId."""
    positions: dict[str, tuple[int, int]] = {}
    failures: list[str] = []
    producer = Producer({**kafka_config, "acks": "all", "enable.idempotence": True,
                         "on_delivery": _delivered(positions, failures)})  # fmt: skip
    ids = list(ids)
    send(producer, topic, ids, partition)
    assert producer.flush(30) == 0, "records still in flight after 30 s"
    assert not failures, failures
    assert set(positions) == set(ids), (sorted(positions), ids)
    return positions


class OpenTransaction:
    """A transactional producer with one transaction left open until :meth:`commit` or
    :meth:`abort` (the producer object stays alive meanwhile)."""

    def __init__(self, kafka_config: Mapping[str, str], topic: str, ids: Iterable[str]) -> None:
        self.positions: dict[str, tuple[int, int]] = {}
        self.config, self.topic = kafka_config, topic
        failures: list[str] = []
        self.producer = Producer({
            **kafka_config, "acks": "all", "enable.idempotence": True,
            "transactional.id": f"everyday-{uuid.uuid4().hex[:10]}",
            "transaction.timeout.ms": 300000, "on_delivery": _delivered(self.positions, failures),
        })  # fmt: skip
        self.producer.init_transactions(30)
        self.producer.begin_transaction()
        self.open = True
        ids = list(ids)
        send(self.producer, topic, ids)
        assert self.producer.flush(30) == 0, "transactional records still in flight"
        assert not failures, failures
        assert set(self.positions) == set(ids), (sorted(self.positions), ids)

    def commit(self) -> None:
        self.producer.commit_transaction(30)
        self.open = False
        self._markers_written()

    def abort(self) -> None:
        if self.open:
            self.producer.abort_transaction(30)
            self.open = False
            self._markers_written()

    def _markers_written(self) -> None:
        """Wait for the transaction's markers: the broker has ended the transaction when
        ``commit_transaction``/``abort_transaction`` return, but writes the markers to the
        partitions after that, so the last stable offset can still stand at the transaction's
        first record for a moment."""
        deadline = time.monotonic() + 30
        while last_stable_offsets(self.config, self.topic) != high_watermarks(
            self.config, self.topic
        ):
            assert time.monotonic() < deadline, "transaction markers not written after 30 s"
            time.sleep(0.05)


def commit_group(kafka_config: Mapping[str, str], group: str, topic: str,
                 offsets: Mapping[int, int] | None = None) -> dict[int, int]:  # fmt: skip
    """Commit the group's offsets as a consumer would (default: the high watermark of every
    partition, i.e. everything in the log, uncommitted transactions included)."""
    if offsets is None:
        offsets = high_watermarks(kafka_config, topic)
    admin = AdminClient(dict(kafka_config))
    tps = [TopicPartition(topic, p, o) for p, o in sorted(offsets.items())]
    futures = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)])
    for tp in futures[group].result(timeout=30).topic_partitions:
        assert not tp.error, f"committing {group} {tp.topic}[{tp.partition}]: {tp.error}"
    return dict(offsets)


def delete_records(kafka_config: Mapping[str, str], topic: str, partition: int,
                   before: int) -> int:  # fmt: skip
    """Remove every record below ``before`` as retention would; the new log-start offset."""
    admin = AdminClient(dict(kafka_config))
    futures = admin.delete_records([TopicPartition(topic, partition, before)],
                                   operation_timeout=30, request_timeout=30)  # fmt: skip
    (future,) = futures.values()
    try:
        result = future.result(timeout=30)
    except KafkaException as exc:  # pragma: no cover - the message names the cause
        raise AssertionError(f"delete_records({topic}[{partition}] < {before}): {exc}") from exc
    return int(result.low_watermark)


# --- the sink ------------------------------------------------------------------------------------


def create_sink(pg_kwargs: Mapping[str, Any]) -> str:
    table = f"public.t_{uuid.uuid4().hex[:12]}"
    with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(f"CREATE TABLE {table} (id bigserial PRIMARY KEY, message_id text, "
                    "kafka_partition int, kafka_offset bigint, "
                    "ingested_at timestamptz NOT NULL DEFAULT now())")  # fmt: skip
    pg.close()
    return table


def insert(cur: Any, table: str, ids: Iterable[str],
           positions: Mapping[str, tuple[int, int]] | None = None) -> None:  # fmt: skip
    for mid in ids:
        partition, offset = (positions or {}).get(mid, (None, None))
        cur.execute(f"INSERT INTO {table} (message_id, kafka_partition, kafka_offset) "
                    "VALUES (%s, %s, %s)", (mid, partition, offset))  # fmt: skip


def write_rows(pg_kwargs: Mapping[str, Any], table: str, ids: Iterable[str],
               positions: Mapping[str, tuple[int, int]] | None = None) -> None:  # fmt: skip
    """One committed sink row per id, in one transaction of a fresh connection."""
    pg = psycopg2.connect(**pg_kwargs)
    try:
        with pg, pg.cursor() as cur:
            insert(cur, table, ids, positions)
    finally:
        pg.close()


def consume_into_sink(kafka_config: Mapping[str, str], topic: str, group: str,
                      pg_kwargs: Mapping[str, Any], table: str,
                      since: Mapping[int, int]) -> list[str]:  # fmt: skip
    """A consumer of ``group``: every committed record of ``topic`` from ``since`` (per partition)
    to the end becomes one sink row (messageId from header ``message_id``); the group commits the
    end. :returns: the messageIds written."""
    ends = high_watermarks(kafka_config, topic)
    consumer = Consumer({**kafka_config, "group.id": f"kit-reader-{uuid.uuid4().hex[:8]}",
                         "isolation.level": "read_committed", "enable.partition.eof": True,
                         "enable.auto.commit": False})  # fmt: skip
    written: dict[str, tuple[int, int]] = {}
    try:
        todo = {p for p in ends if since.get(p, 0) < ends[p]}
        consumer.assign([TopicPartition(topic, p, since.get(p, 0)) for p in sorted(todo)])
        while todo:
            msg = consumer.poll(30)
            assert msg is not None, "nothing read in 30 s"
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                todo.discard(msg.partition())
                continue
            mid = dict(msg.headers() or [])["message_id"].decode()
            written[mid] = (msg.partition(), msg.offset())
    finally:
        consumer.close()
    write_rows(pg_kwargs, table, list(written), written)
    commit_group(kafka_config, group, topic, ends)
    return list(written)


# --- a pipeline, its runs and their results -------------------------------------------------------


@dataclass
class Setup:
    """One test's topic, group, sink table and pipeline (YAML file, config, data dir)."""

    engine: str
    name: str
    topic: str
    group: str
    table: str
    yaml_path: Path
    cfg: PipelineConfig
    data_dir: str
    pg_kwargs: dict[str, Any]
    closers: list[Any] = field(default_factory=list)

    @classmethod
    def make(cls, tmp_path: Path, engine: str, topic: str, pg_kwargs: dict[str, Any], *,
             prefix: str, semantics: str = "exactly_once",
             idempotent: bool = False) -> Setup:  # fmt: skip
        tag = uuid.uuid4().hex[:8]
        name = f"ev_{prefix}_{engine}_{tag}"
        table = create_sink(pg_kwargs)
        yaml_path = tmp_path / f"pipelines-{tag}.yaml"
        yaml_path.write_text(WORKLOAD_PIPELINE.format(
            name=name, engine=engine, semantics=semantics, topic=topic,
            group=f"ev-group-{tag}", table=table, idempotent=json.dumps(idempotent),
        ))  # fmt: skip
        cfg = load_pipelines(yaml_path)[name]
        assert cfg.engine == engine and cfg.settle_seconds == 0
        assert cfg.sink.ingest_seq_column == "id"
        return cls(engine, name, topic, f"ev-group-{tag}", table, yaml_path, cfg,
                   str(tmp_path / "data"), pg_kwargs)  # fmt: skip

    def close(self) -> None:
        for closer in reversed(self.closers):
            try:
                closer()
            except Exception as exc:  # noqa: BLE001 - cleanup goes on
                print(f"cleanup: {exc}", file=sys.stderr)
        try:
            with results_db() as pg:
                ensure_schema(pg)  # forget_pipeline needs the schema, even if no run made it
                forget_pipeline(pg, self.name)
        finally:
            pg = psycopg2.connect(**self.pg_kwargs)
            try:
                with pg, pg.cursor() as cur:
                    cur.execute("SET lock_timeout = '10s'")
                    cur.execute(f"DROP TABLE IF EXISTS {self.table}")
            finally:
                pg.close()

    # -- running ------------------------------------------------------------------------------

    def run(self, spark: Any, run_id: str) -> Any:
        from recon.run.steps import run_pipeline

        return run_pipeline(self.cfg, run_id, spark, data_dir=self.data_dir)

    def cli(
        self, run_id: str, timeout: float = 600, runner: Sequence[str] = ("-m", "recon.cli")
    ) -> subprocess.CompletedProcess[str]:
        """``recon run --pipeline NAME --json`` in its own process.

        :param runner: what the interpreter runs the CLI's arguments with (``-c`` and a script
            that changes a module setting first, then calls ``recon.cli.main``)."""
        command = [sys.executable, *runner, "--pipelines", str(self.yaml_path), "run",
                   "--pipeline", self.name, "--run-id", run_id, "--data-dir", self.data_dir,
                   "--json"]  # fmt: skip
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              cwd=REPO, env=os.environ.copy())  # fmt: skip

    # -- reading what a run concluded ---------------------------------------------------------

    def result_rows(self, spark: Any, run_id: str) -> list[Any]:
        return spark.read.parquet(results_path(self.data_dir, self.name, run_id)).collect()

    def verdicts(self, spark: Any, run_id: str) -> Verdicts:
        """The run's verdict by messageId (rows without a messageId left out)."""
        got: Verdicts = {}
        for r in self.result_rows(spark, run_id):
            if r.message_id is None:
                continue
            assert r.message_id not in got, (
                f"run {run_id}: two verdicts for {r.message_id}: {got[r.message_id]}, {r.verdict}"
            )
            got[r.message_id] = r.verdict
        return got

    def discrepancies(self, run_id: str, columns: str = "verdict, message_id, detail"
                      ) -> list[tuple[Any, ...]]:  # fmt: skip
        with results_db() as pg, pg.cursor() as cur:
            cur.execute(
                f"SELECT {columns} FROM recon.discrepancies WHERE pipeline = %s "
                "AND run_id = %s ORDER BY verdict, message_id",
                (self.name, run_id),
            )
            return list(cur.fetchall())

    def run_row(self, run_id: str, columns: str = "status, error") -> tuple[Any, ...] | None:
        with results_db() as pg, pg.cursor() as cur:
            cur.execute(f"SELECT {columns} FROM recon.runs WHERE pipeline = %s AND run_id = %s",
                        (self.name, run_id))  # fmt: skip
            return cur.fetchone()

    def ledger_path(self) -> str | None:
        with results_db() as pg, pg.cursor() as cur:
            cur.execute("SELECT ledger_path FROM recon.pipeline_state WHERE pipeline = %s",
                        (self.name,))  # fmt: skip
            row = cur.fetchone()
        return row[0] if row else None


def ids(prefix: str, start: int, stop: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(start, stop)]


def same(want: Mapping[str, str], got: Mapping[str, str], what: str) -> None:
    """Equal verdicts by messageId; otherwise name every id that differs."""
    wrong = {k: (want.get(k), got.get(k)) for k in sorted(set(want) | set(got))
             if want.get(k) != got.get(k)}  # fmt: skip
    assert not wrong, f"{what}: verdicts differ, messageId: (expected, actual): {wrong}"


def tail(text: str, n: int = 3000) -> str:
    return text[-n:]


def no_traceback(result: subprocess.CompletedProcess[str], what: str) -> None:
    """The command printed no Python traceback; otherwise name the exception it ended with."""
    if "Traceback" in result.stderr:
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        raised = [line for line in lines if re.match(r"^[\w.]+(Error|Exception)\b", line)]
        raise AssertionError(f"{what}: a traceback on stderr (exit {result.returncode}), "
                             f"raising {(raised or lines)[-1][:300]!r}")  # fmt: skip


def parse_summary(result: subprocess.CompletedProcess[str], what: str) -> dict[str, Any]:
    try:
        summary = json.loads(result.stdout)
    except json.JSONDecodeError:
        raise AssertionError(
            f"{what}: stdout is not the JSON summary (exit {result.returncode}); "
            f"stdout: {tail(result.stdout, 1000)!r}; stderr: {tail(result.stderr)}"
        ) from None
    assert isinstance(summary, dict), summary
    return summary


def corrupt_ledger(data_dir: str, pipeline: str, ledger_path: str | None) -> list[str]:
    """Overwrite every Parquet file of the pipeline's ledger (its current version included) with
    garbage, and every index beside them (an intact index lets a run skip a file that holds none
    of its messages, unread); each file is replaced, not written through, so a hard link
    elsewhere keeps its bytes."""
    root = ledger_dir(data_dir, pipeline)
    assert ledger_path, "the pipeline has no current ledger version"
    assert os.path.abspath(ledger_path.replace("file:", "")).startswith(os.path.abspath(root)), (
        ledger_path, root)  # fmt: skip
    spoiled = []
    for folder, _, files in os.walk(root):
        for f in files:
            if f.endswith(".parquet") or f in (membership.HEADER, local_segments.FENCES):
                path = os.path.join(folder, f)
                with open(path + ".garbage", "wb") as out:
                    out.write(b"this is not parquet \x00\x01\x02" * 64)
                os.replace(path + ".garbage", path)
                spoiled.append(path)
    assert spoiled, f"no Parquet file under {root}"
    return spoiled
