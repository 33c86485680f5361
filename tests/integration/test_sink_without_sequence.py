"""A sink table written by another tool, without an ingest sequence column (issue 78), on both
engines: each run reads only the rows written since the previous run's snapshot (by the rows'
``xmin``), a row whose transaction commits late is read by the first run that sees it, an
updated row of an upsert sink is read again without counting twice, and a stored horizon that
cannot be trusted makes the run read the whole table and say so.

Each test makes its own table (no ``bigserial``: the shape a Kafka Connect JDBC sink makes) and
pipeline YAML (the kit's, without ``ingest_seq_column``).
"""

from __future__ import annotations

import glob
from collections.abc import Callable, Iterable
from typing import Any

import psycopg2
import pyarrow.parquet as pq
import pytest
from everyday_kit import ENGINES, Setup, commit_group, ids, produce, same

from recon.config import load_pipelines
from recon.run.steps import results_db, run_pipeline, window_path

pytestmark = pytest.mark.integration

engines = pytest.mark.parametrize("engine", ENGINES)


def without_sequence(s: Setup, *, upsert: bool = False) -> Setup:
    """The kit's pipeline over a new table without a sequence column (``upsert``: keyed by
    ``row_key``, one row per key, as an upsert writer keeps it)."""
    key = "row_key text PRIMARY KEY, " if upsert else ""
    with psycopg2.connect(**s.pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(f"DROP TABLE {s.table}")
        cur.execute(f"CREATE TABLE {s.table} ({key}message_id text, kafka_partition int, "
                    "kafka_offset bigint, ingested_at timestamptz DEFAULT now())")  # fmt: skip
    pg.close()
    text = s.yaml_path.read_text()
    assert "      ingest_seq_column: id\n" in text
    s.yaml_path.write_text(text.replace("      ingest_seq_column: id\n", ""))
    s.cfg = load_pipelines(s.yaml_path)[s.name]
    assert s.cfg.sink.ingest_seq_column is None
    return s


def write(s: Setup, rows: Iterable[tuple[str, str]], where: dict[str, tuple[int, int]],
          cur: Any = None) -> None:  # fmt: skip
    """Rows ``(row key, messageId)``: inserted, or on an upsert table written over the key's
    row (a redelivery rewrites it)."""
    upsert = "row_key" in _columns(s)

    def put(c: Any) -> None:
        for key, mid in rows:
            part, off = where.get(mid, (None, None))
            if upsert:
                c.execute(f"INSERT INTO {s.table} (row_key, message_id, kafka_partition, "
                          "kafka_offset) VALUES (%s, %s, %s, %s) ON CONFLICT (row_key) DO UPDATE "
                          "SET message_id = EXCLUDED.message_id, kafka_partition = "
                          "EXCLUDED.kafka_partition, kafka_offset = EXCLUDED.kafka_offset, "
                          "ingested_at = now()",
                          (key, mid, part, off))  # fmt: skip
            else:
                c.execute(f"INSERT INTO {s.table} (message_id, kafka_partition, kafka_offset) "
                          "VALUES (%s, %s, %s)", (mid, part, off))  # fmt: skip

    if cur is not None:
        put(cur)
        return
    pg = psycopg2.connect(**s.pg_kwargs)
    try:
        with pg, pg.cursor() as c:
            put(c)
    finally:
        pg.close()


def _columns(s: Setup) -> set[str]:
    schema, table = s.table.split(".")
    with psycopg2.connect(**s.pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute("SELECT column_name FROM information_schema.columns WHERE table_schema = %s "
                    "AND table_name = %s", (schema, table))  # fmt: skip
        names = {r[0] for r in cur.fetchall()}
    pg.close()
    return names


def run(s: Setup, spark: Any, run_id: str) -> tuple[Any, list[str], int]:
    """The run's summary, its progress lines, and how many sink rows it read (its copy)."""
    said: list[str] = []
    summary = run_pipeline(s.cfg, run_id, spark, data_dir=s.data_dir, progress=said.append)
    folder = window_path(s.data_dir, s.name, run_id, "sink").replace("file:", "")
    files = glob.glob(f"{glob.escape(folder)}/*.parquet")
    assert files, f"run {run_id}: no copy of its sink rows in {folder}: {said}"
    return summary, said, sum(pq.read_metadata(f).num_rows for f in files)


def reread(s: Setup, run_id: str) -> int:
    """How many of the table's rows the next run may read again besides the new ones: those
    written by a transaction at or after ``run_id``'s snapshot horizon (its xmin), which a
    transaction of another test left open across it pushes back."""
    with results_db() as pg, pg.cursor() as cur:
        cur.execute("SELECT sink_snapshot_to FROM recon.runs WHERE pipeline = %s AND run_id = %s",
                    (s.name, run_id))  # fmt: skip
        (snapshot,) = cur.fetchone()
    assert snapshot, f"run {run_id} recorded no snapshot of the sink"
    horizon = int(snapshot.split(":")[0])
    with psycopg2.connect(**s.pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(f"SELECT xmin::text::bigint FROM {s.table}")
        xids = [int(r[0]) for r in cur.fetchall()]
    pg.close()
    # The test's transactions are all within one epoch of each other.
    return sum(1 for x in xids if x >= horizon & 0xFFFFFFFF)


def said_line(said: list[str], words: str) -> str:
    found = [line for line in said if words in line]
    assert found, f"no progress line says {words!r}: {said}"
    return found[0]


@engines
def test_each_run_reads_only_the_rows_written_since_the_previous_one(
    engine: str, kit_setup: Callable[..., Setup], kafka_config: dict[str, str], spark: Any
) -> None:
    s = without_sequence(kit_setup(engine, "noseq"))
    first = ids("m", 0, 30)
    where = produce(kafka_config, s.topic, first)
    write(s, ((m, m) for m in first), where)
    commit_group(kafka_config, s.group, s.topic)
    summary, said, copied = run(s, spark, "run-1")
    same(dict.fromkeys(first, "delivered"), s.verdicts(spark, "run-1"), "run 1")
    assert copied == 30, f"run 1 reads the whole table once: {copied}"
    said_line(said, "no earlier run recorded a snapshot")

    again = reread(s, "run-1")
    second = ids("m", 30, 40)
    where = produce(kafka_config, s.topic, second)
    write(s, ((m, m) for m in second), where)
    commit_group(kafka_config, s.group, s.topic)
    summary, said, copied = run(s, spark, "run-2")
    same(dict.fromkeys(second, "delivered"), s.verdicts(spark, "run-2"), "run 2")
    assert copied == 10 + again, f"run 2 reads the 10 new rows (and {again} again): {copied}"
    assert summary.sink_rows_scanned == 10, summary.sink_rows_scanned
    said_line(said, "sink read by xmin")

    again = reread(s, "run-2")
    summary, said, copied = run(s, spark, "run-3")
    same({}, s.verdicts(spark, "run-3"), "run 3 (nothing new)")
    assert copied == again, f"run 3 reads no row (but {again} again): {copied}"
    assert summary.sink_rows_scanned == 0 and summary.discrepancies == 0, summary


@engines
@pytest.mark.parametrize("savepoint", [False, True], ids=["plain", "subtransaction"])
def test_a_row_committed_late_is_judged_by_a_later_run(
    engine: str, savepoint: bool, kit_setup: Callable[..., Setup],
    kafka_config: dict[str, str], spark: Any,
) -> None:  # fmt: skip
    s = without_sequence(kit_setup(engine, "noseq_late"))
    every = ids("m", 1, 21)
    where = produce(kafka_config, s.topic, every)
    commit_group(kafka_config, s.group, s.topic)
    writer_a = psycopg2.connect(**s.pg_kwargs)
    s.closers.append(writer_a.close)
    s.closers.append(writer_a.rollback)
    with writer_a.cursor() as cur:
        if savepoint:  # the row's xmin is a subtransaction's, which no snapshot lists
            cur.execute("SELECT pg_current_xact_id()")
            cur.execute("SAVEPOINT a")
        write(s, [("m1", "m1")], where, cur)
        if savepoint:
            cur.execute("RELEASE SAVEPOINT a")
    write(s, ((m, m) for m in every[1:]), where)  # writer B, committed

    run(s, spark, "run-1")
    same({"m1": "lost", **dict.fromkeys(every[1:], "delivered")}, s.verdicts(spark, "run-1"),
         "run 1 (writer A's transaction open)")  # fmt: skip
    run(s, spark, "run-2")
    same({}, s.verdicts(spark, "run-2"), "run 2 (writer A still open)")

    writer_a.commit()
    run(s, spark, "run-3")
    same({"m1": "delivered"}, s.verdicts(spark, "run-3"), "run 3 (writer A committed)")
    run(s, spark, "run-4")
    same({}, s.verdicts(spark, "run-4"), "run 4 (nothing new)")


@engines
def test_an_upsert_sink_reads_updated_rows_again_without_counting_them_twice(
    engine: str, kit_setup: Callable[..., Setup], kafka_config: dict[str, str], spark: Any
) -> None:
    s = without_sequence(kit_setup(engine, "noseq_upsert", semantics="at_least_once"), upsert=True)
    first = ids("m", 0, 10)
    where = produce(kafka_config, s.topic, first)
    write(s, ((m, m) for m in first), where)
    commit_group(kafka_config, s.group, s.topic)
    run(s, spark, "run-1")
    same(dict.fromkeys(first, "delivered"), s.verdicts(spark, "run-1"), "run 1")

    again = reread(s, "run-1")
    new = ids("m", 10, 12)
    where |= produce(kafka_config, s.topic, new)
    # m3..m5 redelivered (their rows rewritten), m7 written again under a second key.
    write(s, [(m, m) for m in ("m3", "m4", "m5", *new)] + [("second-m7", "m7")], where)
    commit_group(kafka_config, s.group, s.topic)
    summary, said, copied = run(s, spark, "run-2")
    got = s.verdicts(spark, "run-2")
    same({"m7": "duplicated", "m10": "delivered", "m11": "delivered"}, got,
         "run 2 (m3..m5 rewritten in place, m7 under a second key)")  # fmt: skip
    # 3 rewritten + 2 new + m7's two rows (its second one brings the first along).
    assert copied == 7 + again, f"run 2 reads the changed rows (and {again} again): {copied}"

    run(s, spark, "run-3")
    same({}, s.verdicts(spark, "run-3"), "run 3 (nothing new)")


@engines
def test_a_horizon_too_old_or_ahead_reads_the_whole_table_and_says_so(
    engine: str, kit_setup: Callable[..., Setup], kafka_config: dict[str, str], spark: Any
) -> None:
    s = without_sequence(kit_setup(engine, "noseq_horizon"))
    first = ids("m", 0, 10)
    where = produce(kafka_config, s.topic, first)
    write(s, ((m, m) for m in first), where)
    commit_group(kafka_config, s.group, s.topic)
    run(s, spark, "run-1")

    def stored(snapshot: str) -> None:
        with results_db() as pg, pg.cursor() as cur:
            cur.execute("UPDATE recon.pipeline_state SET sink_snapshot = %s WHERE pipeline = %s",
                        (snapshot, s.name))  # fmt: skip
            assert cur.rowcount == 1
            pg.commit()

    # Older than any transaction the table holds unfrozen (its relfrozenxid).
    stored("3:3:")
    new = ids("m", 10, 12)
    where = produce(kafka_config, s.topic, new)
    write(s, ((m, m) for m in new), where)
    commit_group(kafka_config, s.group, s.topic)
    summary, said, copied = run(s, spark, "run-2")
    line = said_line(said, "full copy")
    assert "oldest unfrozen transaction" in line, line
    assert copied == 12, f"run 2 reads the whole table: {copied}"
    same(dict.fromkeys(new, "delivered"), s.verdicts(spark, "run-2"), "run 2 (whole table)")

    # A snapshot ahead of the database: it was restored or replaced since.
    stored(f"{2**40}:{2**40}:")
    summary, said, copied = run(s, spark, "run-3")
    assert "restored or replaced" in said_line(said, "full copy")
    assert copied == 12, f"run 3 reads the whole table: {copied}"
    same({}, s.verdicts(spark, "run-3"), "run 3 (nothing new)")


def produce_keyed(kafka_config: dict[str, str], topic: str, key: str,
                  mids: list[str]) -> dict[str, tuple[int, int]]:  # fmt: skip
    """One record per messageId, all under the Kafka key ``key`` (one upsert key)."""
    from confluent_kafka import Producer

    where: dict[str, tuple[int, int]] = {}
    producer = Producer({**kafka_config, "acks": "all"})
    for mid in mids:  # one at a time: a delivery report need not carry the headers
        reports: list[tuple[Any, Any]] = []
        producer.produce(topic, key=key.encode(), value=b"{}", partition=0,
                         headers=[("message_id", mid.encode())],
                         on_delivery=lambda err, msg, r=reports: r.append((err, msg)))  # fmt: skip
        assert producer.flush(30) == 0
        ((err, msg),) = reports
        assert err is None, err
        where[mid] = (msg.partition(), msg.offset())
    return where


@engines
def test_an_upsert_sink_with_order_read_by_xmin_finds_a_stale_overwrite(
    engine: str, kit_setup: Callable[..., Setup], kafka_config: dict[str, str], spark: Any
) -> None:
    s = without_sequence(kit_setup(engine, "noseq_order", semantics="at_least_once"), upsert=True)
    s.yaml_path.write_text(
        s.yaml_path.read_text().replace("      message_id_column: message_id\n",
                                        "      message_id_column: message_id\n"
                                        "      incremental: xmin\n")
        + "    order:\n      key_column: row_key\n      position_column: kafka_offset\n"
        + "    tolerances: {max_out_of_order_ratio: 1.0}\n"
    )  # fmt: skip
    s.cfg = load_pipelines(s.yaml_path)[s.name]
    assert s.cfg.order is not None and s.cfg.sink.incremental == "xmin"
    where = produce_keyed(kafka_config, s.topic, "acct", ["m0"])
    write(s, [("acct", "m0")], where)
    commit_group(kafka_config, s.group, s.topic)
    run(s, spark, "run-1")
    same({"m0": "delivered"}, s.verdicts(spark, "run-1"), "run 1")

    where = produce_keyed(kafka_config, s.topic, "acct", ["m1", "m2"])
    write(s, [("acct", "m2")], where)
    write(s, [("acct", "m1")], where)  # a replay of the older record overwrites the newer
    commit_group(kafka_config, s.group, s.topic)
    _, said, _ = run(s, spark, "run-2")
    said_line(said, "sink read by xmin")
    same({"m1": "delivered", "m2": "out_of_order"}, s.verdicts(spark, "run-2"),
         "run 2 (the key's row rewritten with an older position)")  # fmt: skip
