"""The slow consumer's ground truth is itself true (issue 19, part 1): the scenario runs against
the real Kafka and PostgreSQL, and its claim (the held-back messages late for a 2 s bound, with a
clear gap on both sides of it) is checked against the records' Kafka timestamps, read back here
with confluent-kafka, and the sink rows' ``written_at``, subtracted in PostgreSQL, not by the
workload's own helpers.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, Consumer, KafkaError, TopicPartition
from fixtures.workload_runs import query

pytestmark = pytest.mark.integration

MESSAGES, PARTITIONS, SEED = 200, 3, 11


@pytest.fixture
def run_tag(kafka_config: dict[str, str], pg_kwargs: dict[str, Any]) -> Iterator[str]:
    """A fresh run tag; the run's topic, group, tables and ledger rows are removed afterwards."""
    from recon_workload import remove_run

    tag = "t" + uuid.uuid4().hex[:10]
    yield tag
    remove_run("slow_consumer", tag)


def _records(conf: dict[str, str], topic: str) -> dict[str, tuple[int, int, int, int]]:
    """messageId -> (partition, offset, timestamp type, timestamp ms), from the whole topic."""
    consumer = Consumer(
        {
            **conf,
            "group.id": f"test-wl-late-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    out: dict[str, tuple[int, int, int, int]] = {}
    ended: set[int] = set()
    try:
        while len(ended) < PARTITIONS:
            msg: Any = consumer.poll(10)
            assert msg is not None, f"{topic}: no end of partition within 10 s"
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                ended.add(msg.partition())
                continue
            mid = dict(msg.headers() or [])["message_id"].decode()
            assert mid not in out, f"{mid} twice in the topic"
            kind, stamp = msg.timestamp()
            out[mid] = (msg.partition(), msg.offset(), kind, stamp)
    finally:
        consumer.close()
    return out


def test_held_back_messages_are_late_and_the_rest_well_on_time(
    run_tag: str, kafka_config: dict[str, str], pg_kwargs: dict[str, Any]
) -> None:
    from recon_workload import (
        LATE_BOUND_SECONDS,
        LATE_MIN_SECONDS,
        ON_TIME_MAX_SECONDS,
        TIME_COLUMN,
        run_scenario,
    )

    started = datetime.now(UTC)
    result = run_scenario(
        "slow_consumer",
        messages=MESSAGES,
        partitions=PARTITIONS,
        seed=SEED,
        run_tag=run_tag,
        progress=False,
    )
    assert result.late_bound_seconds == LATE_BOUND_SECONDS == 2.0
    assert (ON_TIME_MAX_SECONDS, LATE_MIN_SECONDS) == (1.0, 3.5)
    assert result.time_column == TIME_COLUMN == "written_at"
    late = set(result.late_ids)
    assert len(late) == result.faults["held_back"] == round(MESSAGES * 0.1)

    # Kafka: every message once, stamped by the producer (CreateTime) after the run started.
    records = _records(kafka_config, result.topic)
    assert len(records) == MESSAGES and late <= set(records)
    assert {kind for _, _, kind, _ in records.values()} == {TIMESTAMP_CREATE_TIME}
    assert min(s for *_, s in records.values()) >= started.timestamp() * 1000 - 1000

    # PostgreSQL: each row's write time minus its record's Kafka timestamp, per message.
    schema, table = result.sink_table.split(".")
    mids = sorted(records)
    rows = query(
        pg_kwargs,
        f"SELECT s.message_id, s.kafka_partition, s.kafka_offset,"
        f" extract(epoch FROM s.{TIME_COLUMN} - to_timestamp(k.ts / 1000.0))::float8,"
        f" s.{TIME_COLUMN} >= s.ingested_at"
        f' FROM {schema}."{table}" s'
        " LEFT JOIN unnest(%s::text[], %s::bigint[]) AS k(mid, ts) ON k.mid = s.message_id",
        (mids, [records[m][3] for m in mids]),
    )
    assert len(rows) == MESSAGES and len({r[0] for r in rows}) == MESSAGES, "once each"
    seconds = {}
    for mid, partition, offset, latency, after_txn_start in rows:
        assert (partition, offset) == records[mid][:2], mid
        assert after_txn_start, f"{mid}: written_at before its transaction began"
        seconds[mid] = latency
    slow = sorted((round(s, 3), m) for m, s in seconds.items() if m in late)
    fast = sorted((round(s, 3), m) for m, s in seconds.items() if m not in late)
    # The gap the truth relies on: nothing between 1 s and 3.5 s, so no jitter can flip one.
    assert slow[0][0] >= LATE_MIN_SECONDS, f"held back, yet fast: {slow[:3]}"
    assert fast[-1][0] <= ON_TIME_MAX_SECONDS, f"on time, yet slow: {fast[-3:]}"
    assert fast[0][0] >= 0, f"written before it was produced: {fast[:3]}"

    # The ledger says the same, message by message: late (with its latency) or delivered.
    ledger = query(
        pg_kwargs,
        "SELECT message_id, expected_verdict, sink_rows, latency_seconds FROM workload.ledger"
        " WHERE scenario_run = %s",
        (result.scenario_run,),
    )
    assert len(ledger) == MESSAGES
    for mid, verdict, sink_rows, latency in ledger:
        assert verdict == ("late" if mid in late else "delivered"), mid
        assert sink_rows == 1, mid
        assert latency == pytest.approx(seconds[mid], abs=0.002), mid
    assert {v: n for v, n in result.counts.items() if n} == {
        "late": len(late),
        "delivered": MESSAGES - len(late),
    }
    assert f"late={len(late)}" in result.summary and "over 2 s" in result.summary

    # The consumer's group committed past everything it wrote (nothing left parked).
    committed = result.faults["group_committed_offsets"]
    for partition in range(PARTITIONS):
        ends = [o for p, o, _, _ in records.values() if p == partition]
        assert committed[str(partition)] == (max(ends) + 1 if ends else None)
