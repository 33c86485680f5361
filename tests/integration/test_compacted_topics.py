"""A compacted topic (``cleanup.policy=compact``) judged after the real log cleaner ran.

The producer writes each key several times, a distinct messageId per version; the consumer writes
every version it reads into the sink and commits. The broker's log cleaner then removes the older
versions: their offsets become gaps inside the window. A sink row whose record was compacted away
is ``unverifiable`` (never ``phantom``); a message a run saw as a committed record past the
group's offset (``pending``) is judged from that fact once its record is compacted away.

Nothing is faked: the topic is configured so that the broker's cleaner removes the versions
(small ``segment.ms``, low ``min.cleanable.dirty.ratio``), and the test waits until it has.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import psycopg2
import pytest
from faultkit import recon_run_here

from recon.run.paths import results_path
from recon.run.steps import results_db
from recon.store import ensure_schema, forget_pipeline

pytestmark = pytest.mark.integration

PIPELINE = """
pipelines:
  {name}:
    engine: {engine}
    semantics: at_least_once
    schedule: null
    settle_seconds: 0
    kafka:
      connection: kafka_default
      topic: {topic}
      consumer_group: {group}
      message_id: {{json_field: id}}
    sink:
      connection: postgres_sink
      table: {table}
      message_id_column: message_id
      ingest_seq_column: id
    tolerances: {{max_duplicate_ratio: 1.0, max_unverifiable: 1000}}
"""

#: How long the broker's log cleaner may take: its default backoff between checks is 15 s.
CLEANER_WAIT = 120.0


class Compacted:
    """A compacted topic, its consumer group, a sink table and a pipeline over them."""

    def __init__(self, kafka_config: dict[str, str], pg_kwargs: dict[str, Any], engine: str,
                 tmp_path: Path) -> None:  # fmt: skip
        from confluent_kafka.admin import AdminClient, NewTopic

        tag = uuid.uuid4().hex[:8]
        self.kafka_config, self.pg_kwargs, self.tmp_path = kafka_config, pg_kwargs, tmp_path
        self.name, self.topic = f"compacted_{tag}", f"compacted-{tag}"
        self.group, self.table = f"compacted-g-{tag}", f"compacted_{tag}"
        self.admin = AdminClient(kafka_config)
        config = {
            "cleanup.policy": "compact",
            "segment.ms": "100",
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": "100",
            "min.compaction.lag.ms": "0",
        }
        topic = NewTopic(self.topic, num_partitions=1, config=config)
        self.admin.create_topics([topic])[self.topic].result(timeout=30)
        with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
            cur.execute(f"CREATE TABLE public.{self.table} "
                        "(id bigserial PRIMARY KEY, message_id text NOT NULL)")  # fmt: skip
        self.pipelines = tmp_path / "pipelines.yaml"
        self.pipelines.write_text(PIPELINE.format(
            name=self.name, engine=engine, topic=self.topic, group=self.group,
            table=f"public.{self.table}"))  # fmt: skip

    def produce(self, versions: list[tuple[str, str]]) -> None:
        """``(key, messageId)`` records, in order, into partition 0."""
        from confluent_kafka import Producer

        producer = Producer(self.kafka_config)
        for key, mid in versions:
            producer.produce(self.topic, json.dumps({"id": mid}).encode(), key.encode(),
                             partition=0)  # fmt: skip
        assert producer.flush(30) == 0, "records were not all delivered"

    def roll(self, mid: str) -> None:
        """One record of its own key after ``segment.ms``: the segment before it is closed, and
        only closed segments are cleaned."""
        time.sleep(0.5)
        self.produce([(f"tail-{mid}", mid)])

    def write_sink(self, ids: list[str]) -> None:
        with psycopg2.connect(**self.pg_kwargs) as pg, pg.cursor() as cur:
            cur.executemany(f"INSERT INTO public.{self.table} (message_id) VALUES (%s)",
                            [(i,) for i in ids])  # fmt: skip

    def commit(self, offset: int) -> None:
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        request = ConsumerGroupTopicPartitions(self.group, [TopicPartition(self.topic, 0, offset)])
        self.admin.alter_consumer_group_offsets([request])[self.group].result(timeout=30)

    def live_offsets(self, isolation: str = "read_committed") -> list[int]:
        """The offsets the log holds now, read from its start to its end (``read_uncommitted``:
        the records of aborted transactions too)."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({
            **self.kafka_config, "group.id": f"probe-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False, "isolation.level": isolation,
        })  # fmt: skip
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=10)
            consumer.assign([TopicPartition(self.topic, 0, low)])
            seen: list[int] = []
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                msg = consumer.poll(1.0)
                if msg is not None and msg.error() is None:
                    seen.append(msg.offset())
                # Transaction markers are never handed out: the end is known by position.
                (position,) = consumer.position([TopicPartition(self.topic, 0)])
                if position.offset >= high:
                    break
            return seen
        finally:
            consumer.close()

    def wait_for_cleaner(self, gone: set[int]) -> None:
        """Until the broker's log cleaner has removed every offset of ``gone`` (aborted records
        included)."""
        deadline = time.monotonic() + CLEANER_WAIT
        while gone & set(self.live_offsets("read_uncommitted")):
            assert time.monotonic() < deadline, (
                f"the log cleaner did not remove offsets {sorted(gone)} of {self.topic} within "
                f"{CLEANER_WAIT:.0f} s (broker's log.cleaner.backoff.ms?)"
            )
            time.sleep(2)

    def run(self, run_id: str, spark: Any) -> dict[str, tuple[str, str]]:
        """One run: ``messageId -> (verdict, detail)`` from the run's results as written."""
        data = self.tmp_path / "data"
        recon_run_here(self.pipelines, self.name, run_id, data, spark)
        path = results_path(str(data), self.name, run_id)
        rows = duckdb.sql(
            "SELECT message_id, verdict, coalesce(detail, '') "
            f"FROM read_parquet('{path}/**/*.parquet') WHERE message_id IS NOT NULL"
        ).fetchall()
        return {m: (v, d) for m, v, d in rows}

    def drop(self) -> None:
        with results_db() as pg:
            forget_pipeline(pg, self.name)
        for future in self.admin.delete_topics([self.topic]).values():
            future.result(timeout=30)
        with psycopg2.connect(**self.pg_kwargs) as pg, pg.cursor() as cur:
            cur.execute(f"DROP TABLE IF EXISTS public.{self.table}")


@pytest.fixture(params=["local", "spark"])
def compacted(
    request: pytest.FixtureRequest, kafka_config: dict[str, str], pg_kwargs: dict[str, Any],
    tmp_path: Path,
) -> Iterator[tuple[Compacted, Any]]:  # fmt: skip
    with results_db() as pg:
        ensure_schema(pg)
    spark = request.getfixturevalue("spark") if request.param == "spark" else None
    c = Compacted(kafka_config, pg_kwargs, request.param, tmp_path)
    try:
        yield c, spark
    finally:
        c.drop()


def _verdicts(found: dict[str, tuple[str, str]]) -> dict[str, str]:
    return {m: v for m, (v, _) in found.items()}


def test_compacted_away_versions_are_unverifiable(compacted: tuple[Compacted, Any]) -> None:
    c, spark = compacted
    # Five keys, three versions each (offsets 0-14), then a record that closes the segment.
    versions = [(f"k{k}", f"v{v}-k{k}") for v in range(3) for k in range(5)]
    c.produce(versions)
    c.roll("tail-1")
    ids = [m for _, m in versions] + ["tail-1"]
    c.write_sink(ids)  # the consumer wrote every version it read, and committed
    c.commit(16)
    c.wait_for_cleaner(set(range(10)))  # versions 0 and 1 are compacted away
    assert c.live_offsets() == [10, 11, 12, 13, 14, 15]

    found = c.run("compacted__1", spark)
    expected = {m: "delivered" for m in ids[10:]}
    expected.update({m: "unverifiable" for m in ids[:10]})
    assert _verdicts(found) == expected
    for mid in ids[:10]:
        detail = found[mid][1]
        assert "compaction" in detail and "partition 0" in detail, detail


def test_pending_then_compacted_away_is_judged_from_what_was_read(
    compacted: tuple[Compacted, Any],
) -> None:
    c, spark = compacted
    # Run 1: five records read committed past the group's offset (0): pending, their sink rows
    # already written by the consumer.
    first = [(f"k{k}", f"v0-k{k}") for k in range(5)]
    c.produce(first)
    c.write_sink([m for _, m in first])
    c.commit(0)
    found = c.run("compacted__1", spark)
    assert _verdicts(found) == {m: "pending" for _, m in first}

    # New versions of every key supersede them; the consumer writes those too and commits past
    # everything; the cleaner removes the records run 1 read.
    second = [(f"k{k}", f"v1-k{k}") for k in range(5)]
    c.produce(second)
    c.roll("tail-2")
    c.write_sink([m for _, m in second] + ["tail-2"])
    c.commit(11)
    c.wait_for_cleaner(set(range(5)))

    found = c.run("compacted__2", spark)
    expected = {m: "delivered" for _, m in first + second}
    expected["tail-2"] = "delivered"
    assert _verdicts(found) == expected, found


def test_in_flight_then_aborted_and_compacted_away_is_unverifiable(
    compacted: tuple[Compacted, Any],
) -> None:
    """A pending message seen only in flight (an open transaction) was never read committed: once
    its transaction aborted and the cleaner removed it, nothing says whether it committed. It is
    unverifiable (compaction), not delivered from a read that never happened, nor phantom."""
    from confluent_kafka import Producer

    c, spark = compacted
    producer = Producer({**c.kafka_config, "transactional.id": f"tx-{c.topic}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(c.topic, json.dumps({"id": "v0-k0"}).encode(), b"k0", partition=0)
    assert producer.flush(30) == 0
    c.write_sink(["v0-k0"])  # a consumer reading uncommitted wrote it
    c.commit(0)
    found = c.run("compacted__1", spark)
    assert _verdicts(found) == {"v0-k0": "pending"}

    producer.abort_transaction(30)  # offset 1: the abort marker
    c.produce([("k0", "v1-k0")])  # offset 2
    c.roll("tail-3")  # offset 3
    c.write_sink(["v1-k0", "tail-3"])
    c.commit(4)
    c.wait_for_cleaner({0})
    assert c.live_offsets() == [2, 3]

    found = c.run("compacted__2", spark)
    assert _verdicts(found) == {
        "v0-k0": "unverifiable", "v1-k0": "delivered", "tail-3": "delivered",
    }, found  # fmt: skip
    assert "removed (retention or compaction)" in found["v0-k0"][1]
