"""Benchmark data: a topic of ~100-byte JSON messages and a sink table that mimics its consumer.

Fast on purpose: one batching producer (lz4, large batches, explicit partitions) and the sink
filled with ``COPY``, not a consumer loop. The fault mix is deterministic in the message's
sequence number, so the expected verdict counts are known without reading anything back:

- 0.5 % lost (no sink row), 0.5 % duplicated (two sink rows, one in five of them three),
- 0.1 % producer retries (a second copy of the message at a later offset: ``topic_duplicate``,
  still one sink row, so ``delivered``),
- 0.005 % records without a messageId (``invalid``; the consumer skipped them),
- phantoms: sink rows whose id is in no record, 0.1 % of the messages.

A dataset grows in chunks (P2 appends ten); each chunk's expected counts are stored beside the
data in ``.state/bench/<name>.json`` so that a second ``make bench`` reuses what is there.
"""

from __future__ import annotations

import io
import json
import os
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bench import disk, progress

PARTITIONS = 8
#: The layout of a stored dataset: a dataset of another layout is generated again.
FORMAT = 2
PAYLOADS = 1024
CHUNK_ROWS = 200_000


@dataclass
class Dataset:
    """One topic, its consumer group and its sink table, and what is in them so far."""

    name: str
    chunks: list[int] = field(default_factory=list)  # messages per chunk, in order
    expected: dict[str, int] = field(default_factory=dict)

    @property
    def topic(self) -> str:
        return f"bench-{self.name}"

    @property
    def group(self) -> str:
        return f"bench-{self.name}-sink"

    @property
    def table(self) -> str:
        return "bench_" + self.name.replace("-", "_")

    @property
    def messages(self) -> int:
        return sum(self.chunks)


def label(n: int) -> str:
    """A dataset size as the figures name it: ``10M``, ``100k``."""
    return f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}k"


def state_dir() -> str:
    path = os.path.join(os.environ["RECON_STATE"], "bench")
    os.makedirs(path, exist_ok=True)
    return path


def _meta_path(name: str) -> str:
    return os.path.join(state_dir(), f"{name}.json")


def kafka_conf() -> dict[str, Any]:
    from recon.config.connections import kafka_connection

    return dict(kafka_connection("kafka_default").config)


def sink_connect() -> Any:
    import psycopg2

    from recon.config.connections import postgres_connection

    return psycopg2.connect(**postgres_connection("postgres_sink").psycopg2_kwargs())


def end_offsets(topic: str) -> dict[int, int]:
    """High watermark per partition (no transactions here, so it is also the LSO)."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({**kafka_conf(), "group.id": "bench-probe", "enable.auto.commit": False})
    try:
        for attempt in range(60):
            try:
                return {
                    p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                    for p in range(PARTITIONS)
                }
            except KafkaException:  # a new topic's leaders are elected a moment later
                if attempt == 59:
                    raise
                time.sleep(0.5)
        raise AssertionError("unreachable")
    finally:
        consumer.close()


def _sink_rows(cur: Any, table: str) -> int:
    from psycopg2 import sql

    cur.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier("public", table)))
    return int(cur.fetchone()[0])


def load(name: str) -> Dataset | None:
    """The dataset as stored, if its topic and sink still hold exactly what its meta says."""
    path = _meta_path(name)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as fh:
        raw = json.load(fh)
    ds = Dataset(raw["name"], raw["chunks"], raw["expected"])
    try:
        ends = end_offsets(ds.topic)
        with sink_connect() as pg, pg.cursor() as cur:
            rows = _sink_rows(cur, ds.table)
    except Exception:  # a topic or table that is gone: generate again
        return None
    if sum(ends.values()) != raw["records"] or rows != raw["sink_rows"]:
        return None
    if raw.get("format") != FORMAT:  # written before the sink rows carried seq and payload
        return None
    return ds


def _save(ds: Dataset, records: int, sink_rows: int) -> None:
    with open(_meta_path(ds.name), "w", encoding="utf-8") as fh:
        json.dump(
            {"name": ds.name, "chunks": ds.chunks, "expected": ds.expected,
             "records": records, "sink_rows": sink_rows, "format": FORMAT},
            fh,
        )  # fmt: skip


def reset(name: str) -> Dataset:
    """Drop the dataset's topic, group and sink table, and create them empty."""
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    from recon_workload.kafka_io import delete_groups
    from recon_workload.sink import create_tables

    ds = Dataset(name)
    admin = AdminClient(kafka_conf())
    if ds.topic in admin.list_topics(timeout=30).topics:
        admin.delete_topics([ds.topic])[ds.topic].result(timeout=60)
        while ds.topic in admin.list_topics(timeout=30).topics:
            time.sleep(0.5)
    delete_groups(kafka_conf(), [ds.group])
    for _ in range(60):  # deletion is asynchronous: retry creation until the name is free
        try:
            topic = NewTopic(ds.topic, PARTITIONS, 1, config={"retention.ms": "-1"})
            admin.create_topics([topic])[ds.topic].result(timeout=60)
            break
        except Exception:
            time.sleep(1)
    with sink_connect() as pg, pg.cursor() as cur:
        create_tables(cur, ds.table)
    _save(ds, 0, 0)
    return ds


def ensure(name: str, messages: int) -> Dataset:
    """A dataset of exactly one chunk of ``messages``, reused when it is already there."""
    ds = load(name)
    if ds is not None and ds.chunks == [messages]:
        progress(f"data {name}: reusing {messages:,} messages")
        return ds
    ds = reset(name)
    append_chunk(ds, messages)
    return ds


def append_chunk(ds: Dataset, messages: int) -> dict[str, int]:
    """Produce ``messages`` more records, write their sink rows, commit the group's offsets.

    :returns: the expected verdict counts of this chunk alone.
    """
    from confluent_kafka import Producer

    needs = disk.Needs()
    needs.messages(messages, f"data {ds.name}")
    disk.require(needs)
    start = time.monotonic()
    chunk = len(ds.chunks)
    prefix = f"{ds.name}-c{chunk}"
    rng = random.Random(chunk)
    letters = "abcdefghijklmnopqrstuvwxyz0123456789"
    payloads = ["".join(rng.choices(letters, k=48)) for _ in range(PAYLOADS)]
    producer = Producer(
        {**kafka_conf(), "linger.ms": 50, "batch.size": 1_000_000, "batch.num.messages": 100_000,
         "compression.type": "lz4", "queue.buffering.max.messages": 2_000_000,
         "queue.buffering.max.kbytes": 2_000_000, "acks": "all"}
    )  # fmt: skip
    base = end_offsets(ds.topic)
    next_offset = dict(base)
    counts: Counter[str] = Counter()
    retries: list[tuple[int, bytes, bytes]] = []
    buf = io.StringIO()
    table = f"public.{ds.table}"
    pg = sink_connect()
    cur = pg.cursor()
    copy_sql = (
        f"COPY {table} (message_id, kafka_topic, kafka_partition, kafka_offset, seq, payload) "
        "FROM STDIN"
    )

    def flush_sink() -> None:
        buf.seek(0)
        cur.copy_expert(copy_sql, buf)
        buf.seek(0)
        buf.truncate()

    produce = producer.produce
    topic = ds.topic
    for i in range(messages):
        part = i % PARTITIONS
        offset = next_offset[part]
        next_offset[part] = offset + 1
        fault = i % 1000
        if i % 20000 == 17:  # no id anywhere: the consumer skips it, the reconciler quarantines it
            produce(topic, b'{"seq": %d, "payload": "no id"}' % i, partition=part)
            counts["invalid"] += 1
            continue
        mid = f"{prefix}-{i:09d}"
        value = f'{{"id": "{mid}", "seq": {i}, "payload": "{payloads[i % PAYLOADS]}"}}'.encode()
        while True:
            try:
                produce(topic, value, mid.encode(), partition=part)
                break
            except BufferError:
                producer.poll(0.05)
        if fault < 5:
            counts["lost"] += 1
        else:
            rows = 1 if fault >= 10 else (3 if fault == 5 else 2)
            # seq and payload as the value holds them: a pipeline comparing them finds no change
            line = f"{mid}\t{topic}\t{part}\t{offset}\t{i}\t{payloads[i % PAYLOADS]}\n"
            buf.write(line * rows)
            counts["duplicated" if rows > 1 else "delivered"] += 1
        if fault == 10:  # a producer retry: the same message again, later, in the next partition
            retries.append((i, value, mid.encode()))
            counts["topic_duplicate"] += 1
        if i % 1000 == 999:
            phantom = f"{prefix}-ph-{i // 1000:07d}"
            buf.write(f"{phantom}\t{topic}\t{part}\t{offset}\t\\N\t\\N\n")
            counts["phantom"] += 1
        if i % CHUNK_ROWS == CHUNK_ROWS - 1:
            producer.poll(0)
            flush_sink()
            progress(f"data {ds.name}: {i + 1:,}/{messages:,} messages", transient=True)
    for i, value, key in retries:
        part = (i + 1) % PARTITIONS
        produce(topic, value, key, partition=part)
        next_offset[part] += 1
    flush_sink()
    pg.commit()
    cur.close()
    pg.close()
    if producer.flush(120) != 0:
        raise RuntimeError(f"data {ds.name}: the producer could not deliver every record")
    ends = end_offsets(ds.topic)
    if ends != next_offset:
        raise RuntimeError(f"data {ds.name}: end offsets {ends} differ from the plan {next_offset}")
    _commit_group(ds, ends)
    ds.chunks.append(messages)
    for k, v in counts.items():
        ds.expected[k] = ds.expected.get(k, 0) + v
    settle(table)
    with sink_connect() as check, check.cursor() as ccur:
        sink_rows = _sink_rows(ccur, ds.table)
    _save(ds, sum(ends.values()), sink_rows)
    progress(
        f"data {ds.name}: {messages:,} messages and their sink rows in "
        f"{time.monotonic() - start:.0f} s"
    )
    return dict(counts)


def _commit_group(ds: Dataset, ends: dict[int, int]) -> None:
    """The consumer group has read everything: its committed offsets are the partition ends."""
    from recon_workload.kafka_io import alter_offsets

    alter_offsets(kafka_conf(), ds.group, {(ds.topic, p): o for p, o in ends.items()})


def make_outbox(ds: Dataset) -> str:
    """The dataset's outbox, made again from its sink (the dataset may have grown): one row per
    messageId the sink holds, written an hour ago (settled, within the horizon). Every message
    of the topic the sink holds is then in the outbox: a three-way run finds nothing unpublished
    and pays for its third input only. Keyed as an outbox is (its sequence, and the messageId
    the application gave the row, unique): the run takes the catalog's word that no id is
    named twice (``recon.read.source.named_once``). :returns: the table's name."""
    table = f"public.{ds.table}_outbox"
    with sink_connect() as pg, pg.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {table}")
        cur.execute(
            f"CREATE TABLE {table} AS SELECT row_number() OVER () AS seq, message_id, "
            "now() - interval '1 hour' AS created_at FROM (SELECT DISTINCT message_id "
            f"FROM public.{ds.table} WHERE message_id IS NOT NULL) ids"
        )
        cur.execute(f"ALTER TABLE {table} ADD PRIMARY KEY (seq), ADD UNIQUE (message_id)")
    settle(table)
    return table


def settle(table: str) -> None:
    """Leave no work on ``table`` for PostgreSQL's background processes, and none for the
    kernel's writeback, before a timed run: vacuumed and analysed now, its new pages written
    out by a checkpoint and synced to disk. Otherwise
    autovacuum scans the rows just written, and their indexes, in the middle of a measured run
    (P7, 2026-11-27: the two-way run of 10M took 77.4 s instead of about 26 s while autovacuum
    went through the freshly made 10M-row outbox)."""
    pg = sink_connect()
    try:
        pg.autocommit = True  # VACUUM runs outside a transaction
        with pg.cursor() as cur:
            cur.execute(f"VACUUM (ANALYZE) {table}")
            cur.execute("CHECKPOINT")
    finally:
        pg.close()
    # The checkpoint hands its pages to the kernel: wait until they are on disk, or their
    # writeback slows the next run's reads and writes (P7 2026-11-27, after VACUUM and
    # CHECKPOINT alone: both steps of the first run after the outbox about 1.9x slower).
    os.sync()


def pipeline_yaml(
    ds: Dataset,
    name: str | None = None,
    engine: str = "spark",
    checks: bool = False,
    source: str | None = None,
) -> dict[str, Any]:
    """The product's declaration of this dataset's pipeline (the messageId is the JSON ``id``).

    :param checks: declare the optional checks too: latency from ``written_at`` (a bound of a day:
        nothing is late) and the payload's ``seq`` and ``payload`` fields (the sink holds them as
        written: nothing is mismatched), so that only their cost differs.
    :param source: declare this outbox table (:func:`make_outbox`) as the pipeline's source.
    """
    declared = _plain_yaml(ds, engine)
    if source is not None:
        declared["source"] = {
            "connection": "postgres_sink", "table": source, "message_id_column": "message_id",
            "time_column": "created_at", "key_column": "seq",
        }  # fmt: skip
    if checks:
        declared["sink"]["time_column"] = "written_at"
        declared["latency"] = {"max_seconds": 86400}
        declared["payload"] = {"fields": {"seq": "seq", "payload": "payload"}}
    return declared


def _plain_yaml(ds: Dataset, engine: str) -> dict[str, Any]:
    return {
        "engine": engine,
        "semantics": "at_least_once",
        "schedule": None,
        "settle_seconds": 0,
        "kafka": {
            "connection": "kafka_default",
            "topic": ds.topic,
            "consumer_group": ds.group,
            "message_id": {"json_field": "id"},
        },
        "sink": {
            "connection": "postgres_sink",
            "table": f"public.{ds.table}",
            "message_id_column": "message_id",
            "ingest_seq_column": "id",
        },
        "tolerances": {"max_duplicate_ratio": 0.05},
        "tags": ["bench"],
    }
