"""The stack smoke pipeline: a transactional producer, a read_committed consumer into a sink table,
and Spark counting committed records in Kafka and rows in PostgreSQL. `make demo` runs it."""

from __future__ import annotations

import json
import sys
import time

from recon.config.connections import ClientConfig

TOPIC = "recon-smoke"
TABLE = "recon_smoke"


def _recreate_topic(config: ClientConfig) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient(config)
    if TOPIC in admin.list_topics(timeout=10).topics:
        admin.delete_topics([TOPIC])[TOPIC].result(timeout=30)
        # Deletion is asynchronous in the controller: wait until the name is free again.
        for _ in range(60):
            if TOPIC not in admin.list_topics(timeout=10).topics:
                break
            time.sleep(0.5)
    for _ in range(60):
        try:
            admin.create_topics([NewTopic(TOPIC, num_partitions=3)])[TOPIC].result(timeout=30)
            return
        except Exception as exc:  # the controller may still be finishing the deletion
            if "already exists" not in str(exc) and "marked for deletion" not in str(exc):
                raise
            time.sleep(0.5)


def _produce(config: ClientConfig, committed: int, aborted: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({**config, "transactional.id": "recon-smoke-producer"})
    producer.init_transactions(30)
    for start, count, commit in ((0, committed, True), (committed, aborted, False)):
        producer.begin_transaction()
        for n in range(start, start + count):
            mid = f"smoke-{n}"
            producer.produce(
                TOPIC,
                key=mid,
                value=json.dumps({"id": mid, "n": n}),
                headers=[("message_id", mid.encode())],
            )
        producer.flush(30)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)


def _consume_into_sink(config: ClientConfig, pg_kwargs: dict[str, object]) -> int:
    import psycopg2
    from confluent_kafka import Consumer
    from psycopg2 import sql

    consumer = Consumer(
        {
            **config,
            "group.id": "recon-smoke-sink",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([TOPIC])
    written = 0
    with psycopg2.connect(**pg_kwargs) as pg:
        with pg.cursor() as cur:
            cur.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(TABLE)))
            cur.execute(
                sql.SQL(
                    "CREATE TABLE {} (id bigserial PRIMARY KEY, message_id text, "
                    "kafka_partition int, kafka_offset bigint)"
                ).format(sql.Identifier(TABLE))
            )
        pg.commit()
        idle_since = time.monotonic()
        while time.monotonic() - idle_since < 5:
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            idle_since = time.monotonic()
            with pg.cursor() as cur:
                cur.execute(
                    sql.SQL(
                        "INSERT INTO {} (message_id, kafka_partition, kafka_offset) "
                        "VALUES (%s, %s, %s)"
                    ).format(sql.Identifier(TABLE)),
                    ((msg.key() or b"").decode(), msg.partition(), msg.offset()),
                )
            pg.commit()
            consumer.commit(message=msg, asynchronous=False)
            written += 1
    consumer.close()
    return written


def main() -> int:
    from recon.config.connections import kafka_connection, postgres_connection
    from recon.spark import spark_session

    kafka = kafka_connection("kafka_default")
    pg = postgres_connection("postgres_sink")
    _recreate_topic(kafka.config)
    _produce(kafka.config, committed=300, aborted=50)
    _consume_into_sink(kafka.config, pg.psycopg2_kwargs())

    spark = spark_session("recon-smoke")
    try:
        in_kafka = (
            spark.read.format("kafka")
            .options(**kafka.spark_options())
            .option("subscribe", TOPIC)
            .option("startingOffsets", "earliest")
            .option("endingOffsets", "latest")
            .option("kafka.isolation.level", "read_committed")
            .load()
            .count()
        )
        in_pg = spark.read.jdbc(pg.jdbc_url, TABLE, properties=pg.jdbc_properties()).count()
    finally:
        spark.stop()
    equal = "equal" if in_kafka == in_pg else "NOT EQUAL"
    print(
        f"smoke: Spark read {in_kafka} committed records from Kafka topic {TOPIC} and "
        f"{in_pg} rows from PostgreSQL table {TABLE}: {equal} (50 aborted records not counted)"
    )
    return 0 if in_kafka == in_pg else 1


if __name__ == "__main__":
    sys.exit(main())
