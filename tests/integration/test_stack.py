"""The stack is real: Kafka transactions, consumer-group offsets, Spark's Kafka and JDBC sources,
and Airflow on its PostgreSQL metadata database."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def _produce_committed_aborted_committed(kafka_config: dict[str, str], topic: str) -> None:
    """5 committed, 3 aborted, 2 committed.

    Offsets 0-4, marker 5, aborted 6-8, marker 9, 10-11, marker 12.
    """
    producer = Producer(
        {**kafka_config, "transactional.id": f"txn-{topic}", "transaction.timeout.ms": 60000}
    )
    producer.init_transactions(30)
    for batch, commit in (("a", True), ("x", False), ("b", True)):
        producer.begin_transaction()
        size = 3 if batch == "x" else (5 if batch == "a" else 2)
        for i in range(size):
            mid = f"{batch}{i}"
            producer.produce(
                topic,
                key=mid,
                value=json.dumps({"id": mid}),
                partition=0,
                headers=[("message_id", mid.encode())],
            )
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)


def _read_all(kafka_config: dict[str, str], topic: str, isolation: str) -> list[tuple[int, str]]:
    consumer = Consumer(
        {
            **kafka_config,
            "group.id": f"reader-{uuid.uuid4().hex[:8]}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen: list[tuple[int, str]] = []
    try:
        while True:
            msg = consumer.poll(10)
            assert msg is not None, "no end of partition within 10 s"
            if msg.error():
                assert msg.error().code() == msg.error()._PARTITION_EOF, msg.error()
                break
            seen.append((msg.offset(), msg.key().decode()))
    finally:
        consumer.close()
    return seen


COMMITTED = [(0, "a0"), (1, "a1"), (2, "a2"), (3, "a3"), (4, "a4"), (10, "b0"), (11, "b1")]


def test_transactions_leave_offset_gaps_and_read_committed_sees_only_commits(
    kafka_config: dict[str, str], new_topic: Callable[..., str], spark: Any
) -> None:
    topic = new_topic("txn")
    _produce_committed_aborted_committed(kafka_config, topic)

    assert _read_all(kafka_config, topic, "read_committed") == COMMITTED
    uncommitted = _read_all(kafka_config, topic, "read_uncommitted")
    assert [k for _, k in uncommitted] == [
        "a0",
        "a1",
        "a2",
        "a3",
        "a4",
        "x0",
        "x1",
        "x2",
        "b0",
        "b1",
    ]

    # Offsets are not counts: 13 offsets hold 7 committed records.
    admin = AdminClient(kafka_config)
    tp = TopicPartition(topic, 0)
    hwm = admin.list_offsets({tp: OffsetSpec.latest()})[tp].result().offset
    lso = (
        admin.list_offsets(
            {tp: OffsetSpec.latest()}, isolation_level=IsolationLevel.READ_COMMITTED
        )[tp]
        .result()
        .offset
    )
    assert hwm == 13 and lso == 13

    rows = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", kafka_config["bootstrap.servers"])
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", json.dumps({topic: {"0": lso}}))
        .option("kafka.isolation.level", "read_committed")
        .option("includeHeaders", "true")
        .load()
        .selectExpr("offset", "CAST(key AS STRING) AS k", "headers[0].value AS h")
        .orderBy("offset")
        .collect()
    )
    assert [(r.offset, r.k) for r in rows] == COMMITTED
    assert [bytes(r.h).decode() for r in rows] == [k for _, k in COMMITTED]


def test_consumer_group_offsets_read_back_through_admin_client(
    kafka_config: dict[str, str], new_topic: Callable[..., str]
) -> None:
    topic = new_topic("grp", partitions=2)
    producer = Producer(kafka_config)
    for i in range(10):
        producer.produce(topic, value=f"m{i}".encode(), partition=i % 2)
    producer.flush(30)

    group = f"grp-{uuid.uuid4().hex[:8]}"
    consumer = Consumer(
        {
            **kafka_config,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
    got = 0
    while got < 7:
        msg = consumer.poll(10)
        assert msg is not None and not msg.error()
        got += 1
    consumer.commit(
        offsets=[TopicPartition(topic, 0, 3), TopicPartition(topic, 1, 4)], asynchronous=False
    )
    consumer.close()

    admin = AdminClient(kafka_config)
    request = ConsumerGroupTopicPartitions(
        group, [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    )
    result = admin.list_consumer_group_offsets([request], require_stable=True)[group].result()
    committed = {tp.partition: tp.offset for tp in result.topic_partitions}
    assert committed == {0: 3, 1: 4}


def test_spark_reads_postgres_through_jdbc_in_partitions(
    pg_kwargs: dict[str, Any], spark: Any
) -> None:
    table = f"it_jdbc_{uuid.uuid4().hex[:8]}"
    with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(f"CREATE TABLE {table} (id bigserial PRIMARY KEY, message_id text NOT NULL)")
        cur.execute(
            f"INSERT INTO {table} (message_id) SELECT 'm' || g FROM generate_series(1, 1000) g"
        )
    try:
        from recon.config.connections import postgres_connection

        conn = postgres_connection("postgres_sink")
        df = spark.read.jdbc(
            conn.jdbc_url,
            table,
            column="id",
            lowerBound=1,
            upperBound=1001,
            numPartitions=4,
            properties={**conn.jdbc_properties(), "fetchsize": "500"},
        )
        assert df.rdd.getNumPartitions() == 4
        assert df.count() == 1000
        assert df.selectExpr("count(DISTINCT message_id) AS n").first().n == 1000
    finally:
        with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
            cur.execute(f"DROP TABLE {table}")


def test_airflow_loads_dags_into_its_postgres_metadata_db() -> None:
    env = dict(os.environ)
    conn = subprocess.run(
        ["airflow", "config", "get-value", "database", "sql_alchemy_conn"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert conn.startswith("postgresql")
    subprocess.run(
        ["airflow", "dags", "reserialize"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    out = subprocess.run(
        ["airflow", "dags", "list", "-o", "json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    # Airflow prints warnings before the JSON document: it is the last line.
    dags = {d["dag_id"]: d for d in json.loads(out.strip().splitlines()[-1])}
    assert "recon_stack_check" in dags
    assert Path(dags["recon_stack_check"]["fileloc"]).parent == ROOT / "dags"
