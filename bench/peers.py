"""The two peers, each the code a competent engineer writes by hand for the same question.

    python -m bench.peers python|duckdb|spark --dataset NAME

(a) ``python``: confluent-kafka batch consume of the window, ``json.loads`` of each value for its
    ``id``, a Counter of topic ids; the sink's ids through ``COPY ... TO STDOUT`` into a Counter;
    verdicts from the two Counters.
(b) ``duckdb``: the same consume, the raw values handed to DuckDB as an Arrow table (DuckDB parses
    the JSON); the sink's ids through ``COPY`` into Arrow (DuckDB cannot load its postgres
    extension here); verdicts with SQL group-bys.
(c) ``spark``: the PySpark job a Spark user writes for it, in a JVM of its own (``local[*]``, the
    product's driver memory and jars, Spark's other settings as they come):
    ``spark.read.format("kafka")`` with the window's offsets as ``startingOffsets`` /
    ``endingOffsets`` JSON (``read_committed``), ``get_json_object`` of the value for the id,
    ``spark.read.jdbc`` of the sink's ids (split by its ``id`` column into one partition per
    core), a group-by on each side, one full outer join, counts collected.

What the peers check, and what they do not (the product does): they count each window alone,
from nothing (no ledger: a message judged in an earlier window, or whose sink row comes in a
later one, is lost or phantom to them); a record's id is its JSON ``id`` as it stands (no
quarantine of ids that are no text, blank or padded); they read committed records only and say
nothing of aborted or pending ones, nor of the partition and offset a sink row claims; they
write nothing (no discrepancy rows, results or watermarks) and commit nothing.

All three print one JSON line with the verdict counts a peer can compute: delivered, lost,
duplicated, phantom, topic_duplicate, invalid.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any

from recon.read.kafka_local.reader import FETCH_SETTINGS as READER_FETCH_SETTINGS

BATCH = 10_000
#: The librdkafka fetch settings of the product's own readers, so that every system reads the
#: topic equally fast (with librdkafka's defaults a partition stops fetching for a second
#: whenever 100,000 records wait locally).
FETCH_SETTINGS = READER_FETCH_SETTINGS


def read_window(topic: str, ends: dict[int, int], timeout: float = 1.0) -> Iterator[list[Any]]:
    """Batches of records of ``[0, end)`` per partition, as confluent-kafka hands them over.

    :param timeout: how long ``consume()`` waits for a full batch (the last one never is).
    """
    from confluent_kafka import Consumer, TopicPartition

    from bench.generate import kafka_conf

    consumer = Consumer(
        {**kafka_conf(), "group.id": "bench-peer", "enable.auto.commit": False,
         "isolation.level": "read_committed", **FETCH_SETTINGS}
    )  # fmt: skip
    consumer.assign([TopicPartition(topic, p, 0) for p, end in ends.items() if end > 0])
    remaining = {p for p, end in ends.items() if end > 0}
    try:
        while remaining:
            batch = consumer.consume(num_messages=BATCH, timeout=timeout)
            kept = []
            for msg in batch:
                if msg.error():
                    continue
                p, offset = msg.partition() or 0, msg.offset() or 0
                if p not in remaining:
                    continue
                if offset >= ends[p] - 1:
                    remaining.discard(p)
                    consumer.pause([TopicPartition(topic, p)])
                if offset < ends[p]:
                    kept.append(msg)
            yield kept
    finally:
        consumer.close()


def copy_sink_ids(table: str, fmt: str = "text") -> io.BytesIO:
    """Every sink row's messageId, one per line, through one ``COPY ... TO STDOUT``."""
    from bench.generate import sink_connect

    out = io.BytesIO()
    with sink_connect() as pg, pg.cursor() as cur:
        option = " WITH (FORMAT csv)" if fmt == "csv" else ""
        cur.copy_expert(f"COPY (SELECT message_id FROM public.{table}) TO STDOUT{option}", out)
    out.seek(0)
    return out


def python_peer(topic: str, table: str, ends: dict[int, int]) -> dict[str, int]:
    topic_ids: Counter[str] = Counter()
    invalid = 0
    loads = json.loads
    for batch in read_window(topic, ends):
        for msg in batch:
            try:
                mid = loads(msg.value())["id"]
            except (ValueError, KeyError, TypeError):
                invalid += 1
                continue
            topic_ids[mid] += 1
    sink_ids: Counter[str] = Counter(
        line.rstrip("\n") for line in io.TextIOWrapper(copy_sink_ids(table), encoding="utf-8")
    )
    counts = Counter({"invalid": invalid})
    for mid, copies in topic_ids.items():
        rows = sink_ids.get(mid, 0)
        counts["lost" if rows == 0 else "delivered" if rows == 1 else "duplicated"] += 1
        if copies > 1:
            counts["topic_duplicate"] += 1
    counts["phantom"] = sum(1 for mid in sink_ids if mid not in topic_ids)
    return dict(counts)


def duckdb_peer(topic: str, table: str, ends: dict[int, int]) -> dict[str, int]:
    import duckdb
    import pyarrow as pa
    from pyarrow import csv

    batches = []
    for batch in read_window(topic, ends):
        if batch:
            values = pa.array([m.value() for m in batch], pa.binary())
            batches.append(pa.RecordBatch.from_arrays([values], ["value"]))
    records = pa.Table.from_batches(batches, pa.schema([("value", pa.binary())]))
    sink = csv.read_csv(
        copy_sink_ids(table, "csv"),
        read_options=csv.ReadOptions(column_names=["message_id"]),
        convert_options=csv.ConvertOptions(column_types={"message_id": pa.string()}),
    )
    db = duckdb.connect()
    db.register("records", records)
    db.register("sink", sink)
    db.execute(
        "CREATE TEMP TABLE t AS SELECT json_extract_string(decode(value), '$.id') AS id "
        "FROM records"
    )
    rows = db.execute(
        """
        WITH topic AS (SELECT id, count(*) AS copies FROM t WHERE id IS NOT NULL GROUP BY id),
             s AS (SELECT message_id AS id, count(*) AS n FROM sink GROUP BY message_id)
        SELECT CASE WHEN s.n IS NULL THEN 'lost' WHEN s.n = 1 THEN 'delivered'
                    ELSE 'duplicated' END AS verdict, count(*), count_if(topic.copies > 1)
        FROM topic LEFT JOIN s USING (id) GROUP BY 1
        """
    ).fetchall()
    counts = {verdict: int(n) for verdict, n, _ in rows}
    counts["topic_duplicate"] = sum(int(d) for _, _, d in rows)
    counts["phantom"] = _scalar(
        db,
        "SELECT count(*) FROM (SELECT DISTINCT message_id FROM sink) s "
        "ANTI JOIN (SELECT DISTINCT id FROM t WHERE id IS NOT NULL) w ON s.message_id = w.id",
    )
    counts["invalid"] = _scalar(db, "SELECT count(*) FROM t WHERE id IS NULL")
    return counts


def spark_peer(topic: str, table: str, ends: dict[int, int]) -> dict[str, int]:
    """Peer (c): the job as a Spark user writes it (the module's docstring says what it checks).
    The JVM's start is in the time, as it is for the product's Spark engine in its own JVM."""
    import os

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from bench.generate import kafka_conf
    from recon import settings
    from recon.config.connections import postgres_connection
    from recon.spark.jars import spark_jar_settings

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.appName("bench-peer-spark")
        .master("local[*]")
        .config("spark.driver.memory", settings.spark_driver_memory())
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    for key, value in spark_jar_settings().items():  # the Kafka source and the JDBC driver
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    try:
        window = {topic: {str(p): 0 for p in ends}}
        until = {topic: {str(p): end for p, end in ends.items()}}
        records = (
            spark.read.format("kafka")
            .option("kafka.bootstrap.servers", kafka_conf()["bootstrap.servers"])
            .option("kafka.isolation.level", "read_committed")
            .option("subscribe", topic)
            .option("startingOffsets", json.dumps(window))
            .option("endingOffsets", json.dumps(until))
            .load()
        )
        ids = records.select(F.get_json_object(F.col("value").cast("string"), "$.id").alias("id"))
        pg = postgres_connection("postgres_sink")
        props = {"user": pg.user, "password": pg.password, "driver": "org.postgresql.Driver",
                 "fetchsize": "10000"}  # fmt: skip
        bounds = spark.read.jdbc(
            pg.jdbc_url, f"(SELECT min(id) AS lo, max(id) AS hi FROM public.{table}) b",
            properties=props,
        ).first()  # fmt: skip
        sink = spark.read.jdbc(
            pg.jdbc_url, f"(SELECT id, message_id FROM public.{table}) s", column="id",
            lowerBound=int(bounds["lo"] or 0), upperBound=int(bounds["hi"] or 0) + 1,
            numPartitions=spark.sparkContext.defaultParallelism, properties=props,
        )  # fmt: skip
        # Records without an id group under a null id, which meets no sink row in the join.
        topic_ids = ids.groupBy("id").agg(F.count("*").alias("copies"))
        sink_ids = sink.groupBy("message_id").agg(F.count("*").alias("rows"))
        joined = topic_ids.join(sink_ids, topic_ids.id == sink_ids.message_id, "full_outer")
        verdict = (
            F.when(F.col("id").isNull() & F.col("message_id").isNull(), "invalid")
            .when(F.col("id").isNull(), "phantom")
            .when(F.col("rows").isNull(), "lost")
            .when(F.col("rows") == 1, "delivered")
            .otherwise("duplicated")
        )
        rows = (
            joined.groupBy(verdict.alias("verdict"))
            .agg(
                F.sum(
                    F.when(
                        F.col("id").isNull() & F.col("message_id").isNull(), F.col("copies")
                    ).otherwise(1)
                ).alias("n"),
                F.sum(F.when(F.col("copies") > 1, 1).otherwise(0)).alias("dup"),
            )  # fmt: skip
            .collect()
        )
    finally:
        spark.stop()
    counts = {r["verdict"]: int(r["n"]) for r in rows}
    counts["topic_duplicate"] = sum(int(r["dup"]) for r in rows if r["verdict"] != "invalid")
    counts.setdefault("invalid", 0)
    return counts


def _scalar(db: Any, query: str) -> int:
    row = db.execute(query).fetchone()
    return int(row[0]) if row else 0


def main(argv: list[str] | None = None) -> int:
    from bench.generate import Dataset, end_offsets

    parser = argparse.ArgumentParser(prog="bench.peers")
    parser.add_argument("peer", choices=("python", "duckdb", "spark"))
    parser.add_argument("--dataset", required=True)
    args = parser.parse_args(argv)
    ds = Dataset(args.dataset)
    ends = end_offsets(ds.topic)
    peer = {"python": python_peer, "duckdb": duckdb_peer, "spark": spark_peer}[args.peer]
    print(json.dumps({"counts": peer(ds.topic, ds.table, ends)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
