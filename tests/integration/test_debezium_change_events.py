"""A Debezium change-event topic reconciled against a replica table an upserting consumer writes
(issue 74, item 3, inserts and updates): each event's messageId is its LSN (``source.lsn`` of
the envelope), the key ``after.id``, the version the LSN, so the product judges per key what the
declarations already support: a key the replica never got is ``lost``, a stale overwrite (an
older event written over a newer one) ``out_of_order``, every other event ``delivered``. Local
engine, on the real Connect worker; the connector, its slot and publication are removed after.

Not covered yet (needs the readers to know an envelope's ``op``): delete events (their ``after``
is null, so the key is unknown and a delete would be judged ``lost``) and tombstones (``invalid``);
the connector here skips both.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import duckdb
import psycopg2
import pytest
from confluent_kafka import Consumer, TopicPartition

from recon.config import load_pipelines
from recon.run.steps import results_db, results_path, run_pipeline
from recon.store import forget_pipeline
from recon_workload import debezium, kafka_io

pytestmark = pytest.mark.integration

KEYS, UPDATES = 8, 2
LOST_KEY, STALE_KEY = "k3", "k5"

PIPELINE = """
pipelines:
  {name}:
    engine: local
    semantics: at_least_once
    schedule: null
    settle_seconds: 0
    kafka:
      connection: kafka_default
      topic: {topic}
      consumer_group: {group}
      message_id: {{json_field: source.lsn}}
    sink:
      connection: postgres_sink
      table: {replica}
      message_id_column: message_id
    order:
      record_key: {{json_field: after.id}}
      key_column: id
      position_column: lsn
      version_field: source.lsn
    tolerances: {{max_out_of_order_ratio: 1.0}}
"""


def _exec(pg_kwargs: dict[str, Any], *statements: str) -> None:
    db = psycopg2.connect(**pg_kwargs)
    try:
        with db, db.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        db.close()


def _read_all(kafka_config: dict[str, str], topic: str, count: int) -> list[Any]:
    """The topic's first ``count`` records, waiting up to a minute for them."""
    consumer = Consumer({**kafka_config, "group.id": f"t-{uuid.uuid4().hex[:8]}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})  # fmt: skip
    consumer.assign([TopicPartition(topic, 0, 0)])
    records: list[Any] = []
    deadline = time.monotonic() + 60
    try:
        while len(records) < count and time.monotonic() < deadline:
            records += [m for m in consumer.consume(100, timeout=1.0) if m.error() is None]
    finally:
        consumer.close()
    assert len(records) == count, f"{topic}: {len(records)} of {count} change events"
    return records


def test_a_change_topic_is_judged_per_key_against_its_upserted_replica(
    pg_kwargs: dict[str, Any], kafka_config: dict[str, str], tmp_path: Path
) -> None:
    tag = uuid.uuid4().hex[:6]
    items, replica = f"public.cdc_items_{tag}", f"public.cdc_replica_{tag}"
    connector, publication = f"recon-cdc-{tag}", f"recon_cdc_{tag}"
    topic = f"recon_cdc_{tag}.{items}"
    group, name = f"cdc-replica-{tag}", f"cdc_{tag}"
    role = os.environ["RECON_PG_DEBEZIUM_USER"]
    _exec(
        pg_kwargs,
        f"CREATE TABLE {items} (id text PRIMARY KEY, qty int NOT NULL)",
        f"CREATE TABLE {replica} (id text PRIMARY KEY, lsn bigint NOT NULL, message_id text)",
        f"GRANT SELECT ON {items} TO {role}",
        f"CREATE PUBLICATION {publication} FOR TABLE {items}",
    )
    kafka_io.create_topics(kafka_config, [topic], 1)
    try:
        debezium.create(connector, debezium.change_events_config(connector, publication, items))
        keys = [f"k{i}" for i in range(KEYS)]
        _exec(pg_kwargs, *(f"INSERT INTO {items} VALUES ('{k}', 0)" for k in keys))
        for round_ in range(1, UPDATES + 1):
            _exec(pg_kwargs, *(f"UPDATE {items} SET qty = {round_} WHERE id = '{k}'" for k in keys))
        events = _read_all(kafka_config, topic, KEYS * (UPDATES + 1))

        # The replica's consumer: an upsert per event, in topic order, except that it never
        # gets LOST_KEY's events, and writes STALE_KEY's first event again after its newest.
        rows: dict[str, tuple[int, str]] = {}
        stale: tuple[int, str] | None = None
        for record in events:
            doc = json.loads(record.value())
            key, lsn = doc["after"]["id"], int(doc["source"]["lsn"])
            if key == LOST_KEY:
                continue
            rows[key] = (lsn, str(lsn))
            if key == STALE_KEY and stale is None:
                stale = (lsn, str(lsn))
        assert stale is not None
        newest_stale = rows[STALE_KEY][1]
        rows[STALE_KEY] = stale
        db = psycopg2.connect(**pg_kwargs)
        with db, db.cursor() as cur:
            for key, (lsn, mid) in rows.items():
                cur.execute(f"INSERT INTO {replica} VALUES (%s, %s, %s)", (key, lsn, mid))
        db.close()
        commit = Consumer({**kafka_config, "group.id": group, "enable.auto.commit": False})
        commit.commit(offsets=[TopicPartition(topic, 0, len(events))], asynchronous=False)
        commit.close()

        yaml_path = tmp_path / "pipelines.yaml"
        yaml_path.write_text(PIPELINE.format(name=name, topic=topic, group=group, replica=replica))
        data_dir = str(tmp_path / "data")
        try:
            run_pipeline(load_pipelines(yaml_path)[name], "run-1", None, data_dir=data_dir)
            parts = f"{results_path(data_dir, name, 'run-1')}/**/*.parquet"
            found = duckdb.sql(
                f"SELECT message_id, verdict FROM read_parquet('{parts}')"
            ).fetchall()
        finally:
            with results_db() as pg:
                forget_pipeline(pg, name)
        verdicts = dict(found)
        by_key: dict[str, list[str]] = {}
        for record in events:
            doc = json.loads(record.value())
            by_key.setdefault(doc["after"]["id"], []).append(str(doc["source"]["lsn"]))
        expected = {lsn: "delivered" for lsns in by_key.values() for lsn in lsns}
        expected.update({lsn: "lost" for lsn in by_key[LOST_KEY]})
        expected[newest_stale] = "out_of_order"
        assert verdicts == expected
    finally:
        debezium.delete(connector)
        _exec(pg_kwargs, f"DROP PUBLICATION IF EXISTS {publication}",
              f"DROP TABLE IF EXISTS {items}", f"DROP TABLE IF EXISTS {replica}")  # fmt: skip
        kafka_io.delete_topics(kafka_config, [topic])
