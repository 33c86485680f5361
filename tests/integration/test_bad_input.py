"""User mistakes get one clear line naming the pipeline and key, exit status 2, no traceback."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from faultkit import Synthetic, message_id, recon_run_here, stored, synthetic

from recon.read.message_ids import MAX_MESSAGE_ID_LENGTH
from recon.run.steps import results_db

pytestmark = pytest.mark.integration

TEMPLATE = """
pipelines:
  p1:
    semantics: exactly_once
    engine: {engine}
    schedule: null
    settle_seconds: 0
    kafka:
      connection: {kafka_conn}
      topic: {topic}
      consumer_group: g1
      message_id: {{header: message_id}}
    sink:
      connection: postgres_sink
      table: {table}
      message_id_column: {column}
"""


@pytest.fixture
def sink_table(pg_kwargs: dict[str, Any]) -> Any:
    name = f"bad_input_{uuid.uuid4().hex[:8]}"
    with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(f"CREATE TABLE {name} (id bigserial PRIMARY KEY, message_id text)")
    yield f"public.{name}"
    with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(f"DROP TABLE {name}")


def _recon(tmp_path: Path, *args: str, **fields: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "pipelines.yaml"
    values = {"kafka_conn": "kafka_default", "column": "message_id", "engine": "spark", **fields}
    path.write_text(TEMPLATE.format(**values))
    return subprocess.run(["recon", "--pipelines", str(path), *args],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def _one_clear_line(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr


def test_unknown_topic(tmp_path: Path, sink_table: str) -> None:
    result = _recon(tmp_path, "check-config", "--connect", topic="no-such-topic", table=sink_table)
    _one_clear_line(result, "pipeline 'p1'", "kafka.topic", "no-such-topic")


def test_missing_connection(tmp_path: Path, new_topic: Callable[..., str], sink_table: str) -> None:
    result = _recon(tmp_path, "check-config", "--connect", topic=new_topic(), table=sink_table,
                    kafka_conn="kafka_nowhere")  # fmt: skip
    _one_clear_line(result, "pipeline 'p1'", "kafka.connection", "AIRFLOW_CONN_KAFKA_NOWHERE")


def test_absent_table(tmp_path: Path, new_topic: Callable[..., str]) -> None:
    result = _recon(tmp_path, "run", "--pipeline", "p1", topic=new_topic(),
                    table="public.no_such_table")  # fmt: skip
    _one_clear_line(result, "pipeline 'p1'", "sink.table", "does not exist")


def test_table_without_the_message_id_column(
    tmp_path: Path, new_topic: Callable[..., str], sink_table: str
) -> None:
    result = _recon(tmp_path, "check-config", "--connect", topic=new_topic(), table=sink_table,
                    column="msg_id")  # fmt: skip
    _one_clear_line(result, "pipeline 'p1'", "sink.message_id_column", "msg_id")


def test_hostile_identifiers_are_quoted_never_run(
    tmp_path: Path, new_topic: Callable[..., str], sink_table: str, pg_kwargs: dict[str, Any]
) -> None:
    hostile = 'x"; DROP TABLE ' + sink_table.split(".")[1] + "; --"
    result = _recon(tmp_path, "check-config", "--connect", topic=new_topic(), table=sink_table,
                    column=f"'{hostile}'")  # fmt: skip
    _one_clear_line(result, "pipeline 'p1'", "sink.message_id_column")
    with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute("SELECT to_regclass(%s)", (sink_table,))
        assert cur.fetchone()[0] is not None, "the sink table was dropped"


def test_invalid_yaml_names_pipeline_and_key(tmp_path: Path) -> None:
    path = tmp_path / "pipelines.yaml"
    path.write_text("pipelines:\n  p1:\n    semantics: exactly_once\n    colour: blue\n")
    result = subprocess.run(["recon", "--pipelines", str(path), "check-config"],
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    _one_clear_line(result, "pipeline 'p1'", "colour")


def test_absent_consumer_group_judges_nothing(
    tmp_path: Path, new_topic: Callable[..., str], sink_table: str, kafka_config: dict[str, str]
) -> None:
    from confluent_kafka import Producer

    topic = new_topic()
    producer = Producer(kafka_config)
    producer.produce(topic, value=b"{}", headers=[("message_id", b"m1")])
    producer.flush(10)
    try:
        # The offset snapshot is one step of both engines: the local one spares a driver JVM.
        result = _recon(tmp_path, "run", "--pipeline", "p1", "--data-dir", str(tmp_path / "d"),
                        topic=topic, table=sink_table, engine="local")  # fmt: skip
        # Nothing committed by the group: the record is pending, nothing is judged or broken.
        assert result.returncode == 0, result.stderr[-2000:]
        assert "pending=1" in result.stdout and "delivered=0" in result.stdout
    finally:
        from recon.run.steps import results_db
        from recon.store import forget_pipeline

        with results_db() as pg:
            forget_pipeline(pg, "p1")


# --- bad records, empty topics, records removed by retention -----------------------------------
# A synthetic pipeline of the fault kit (JSON records, the id in field "id", an ingest sequence),
# fed by hand so that every verdict is counted here.


def _produce(kafka_config: dict[str, str], topic: str, values: list[bytes | None]) -> None:
    from confluent_kafka import Producer

    producer = Producer(kafka_config)
    for value in values:
        producer.produce(topic, value=value, partition=0)
    assert producer.flush(30) == 0, "records were not all delivered"


def _commit(kafka_config: dict[str, str], group: str, topic: str, offset: int) -> None:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(kafka_config)
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, offset)])
    admin.alter_consumer_group_offsets([request])[group].result(timeout=30)


def _sink_rows(pg_kwargs: dict[str, Any], table: str, ids: list[str]) -> None:
    with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
        cur.executemany(f"INSERT INTO {table} (message_id) VALUES (%s)", [(i,) for i in ids])


def _json(mid: str) -> bytes:
    return json.dumps({"id": mid, "amount": 1}).encode()


def _run(
    tmp_path: Path,
    s: Synthetic,
    name: str,
    run_id: str,
    spark: Any,
    capfd: pytest.CaptureFixture[str],
) -> tuple[int, dict[str, Any]]:
    """The run on the Spark engine, in this process on the test session's Spark (no driver JVM
    of its own): `recon run`'s exit status (0 or 1) and its ``--json`` summary."""
    pipelines = tmp_path / "pipelines.yaml"
    pipelines.write_text(s.pipelines_yaml(name))
    capfd.readouterr()
    code, summary = recon_run_here(pipelines, name, run_id, tmp_path / "data", spark)
    # Nothing printed a traceback meanwhile (the JVM's output included: same file descriptors).
    assert "Traceback" not in capfd.readouterr().err
    # What `recon run --json` prints, read back as the CLI's reader would.
    return code, json.loads(json.dumps(dataclasses.asdict(summary), default=str))


def _judged(summary: dict[str, Any]) -> dict[str, int]:
    return {k: v for k, v in summary["counts"].items() if v}


def _discrepancies(name: str, verdict: str) -> list[tuple[Any, ...]]:
    with results_db() as pg, pg.cursor() as cur:
        cur.execute(
            "SELECT first_offset, detail, message_id, sink_count FROM recon.discrepancies "
            "WHERE pipeline = %s AND verdict = %s ORDER BY first_offset NULLS LAST",
            (name, verdict),
        )
        return list(cur.fetchall())


def test_empty_topic_judges_nothing_twice(
    tmp_path: Path, kafka_config: dict[str, str], pg_kwargs: dict[str, Any], spark: Any,
    capfd: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    name = f"empty_{uuid.uuid4().hex[:8]}"
    with synthetic(kafka_config, pg_kwargs, 0, name, partitions=2) as s:
        for run in ("first", "second"):
            code, summary = _run(tmp_path, s, name, f"empty__{run}", spark, capfd)
            assert code == 0, summary
            assert _judged(summary) == {}, run
            assert summary["discrepancies"] == 0 and summary["sink_rows_scanned"] == 0
            assert [(w["window_from"], w["window_to"]) for w in summary["windows"]] == [(0, 0)] * 2
        runs = stored(name).runs
        assert [(r, status) for r, status, _ in runs] == [
            ("empty__first", "passed"),
            ("empty__second", "passed"),
        ]


def test_bad_records_are_invalid_with_their_position(
    tmp_path: Path, kafka_config: dict[str, str], pg_kwargs: dict[str, Any], spark: Any,
    capfd: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    name = f"badrec_{uuid.uuid4().hex[:8]}"
    longest = "y" * MAX_MESSAGE_ID_LENGTH  # the limit itself is a good id
    records: list[bytes | None] = [
        _json("good-0"),  # 0
        json.dumps({"amount": 1}).encode(),  # 1 no id field
        json.dumps({"id": None}).encode(),  # 2 null id
        b"not json at all",  # 3 no JSON, so no id
        json.dumps({"id": ""}).encode(),  # 4 empty
        json.dumps({"id": "   "}).encode(),  # 5 blank
        b'\xff\xfe{"id": "bad-bytes"}',  # 6 not UTF-8
        _json("x" * (MAX_MESSAGE_ID_LENGTH + 1)),  # 7 oversize
        None,  # 8 tombstone
        _json(longest),  # 9
        _json("good-10"),  # 10
        b"",  # 11 empty value
        _json("good-12"),  # 12
    ]
    with synthetic(kafka_config, pg_kwargs, 0, name, partitions=1) as s:
        _produce(kafka_config, s.topic, records)
        _commit(kafka_config, s.group, s.topic, len(records))
        # The consumer wrote the good ones, and one row with a blank id (the column is NOT NULL).
        _sink_rows(pg_kwargs, s.table, ["good-0", longest, "good-10", "good-12", " "])
        code, summary = _run(tmp_path, s, name, "badrec__1", spark, capfd)
        # 9 bad records and the sink row without an id; the 4 good ones delivered, nothing lost.
        assert _judged(summary) == {"delivered": 4, "invalid": 10}
        # invalid is never silent: the run fails (no max_invalid tolerance declared).
        assert code == 1
        assert any(v.get("rule") == "invalid" or v.get("verdict") == "invalid"
                   for v in summary["violations"]), summary["violations"]  # fmt: skip
        invalid = [(off, detail) for off, detail, _, _ in _discrepancies(name, "invalid")]
        assert invalid == [
            (1, "message_id_missing"),
            (2, "message_id_missing"),
            (3, "message_id_missing"),
            (4, "message_id_empty"),
            (5, "message_id_empty"),
            (6, "value_not_utf8"),
            (7, "message_id_oversize"),
            (8, "tombstone"),
            (11, "message_id_missing"),
            (None, "sink row without a message id"),
        ]


def _delete_records_before(kafka_config: dict[str, str], topic: str, offset: int) -> None:
    """What retention does: the partition's log now starts at ``offset``."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(kafka_config)
    for future in admin.delete_records([TopicPartition(topic, 0, offset)]).values():
        assert future.result(timeout=30).low_watermark == offset


def _unverifiable_rows(name: str, run_id: str) -> tuple[list[str], list[str | None]]:
    """(the gap markers' details, the message ids of unverifiable sink rows) of one run."""
    with results_db() as pg, pg.cursor() as cur:
        cur.execute(
            "SELECT detail, message_id FROM recon.discrepancies WHERE pipeline = %s "
            "AND run_id = %s AND verdict = 'unverifiable' ORDER BY message_id NULLS FIRST",
            (name, run_id),
        )
        rows = cur.fetchall()
    return [d for d, m in rows if m is None], [m for _, m in rows if m is not None]


def test_records_removed_by_retention_are_unverifiable(
    tmp_path: Path, kafka_config: dict[str, str], pg_kwargs: dict[str, Any], spark: Any,
    capfd: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    name = f"retained_{uuid.uuid4().hex[:8]}"
    ids = [message_id(i) for i in range(30)]
    with synthetic(kafka_config, pg_kwargs, 10, name, partitions=1,
                   lost_every=10**9, dup_every=10**9) as s:  # fmt: skip
        code, first = _run(tmp_path, s, name, "retained__1", spark, capfd)
        assert (code, _judged(first)) == (0, {"delivered": 10})

        # 1. Log start above the previous watermark: ten more records consumed and written
        # (offsets 10-19), then retention removes everything below 15.
        _produce(kafka_config, s.topic, [_json(m) for m in ids[10:20]])
        _sink_rows(pg_kwargs, s.table, ids[10:20])
        _commit(kafka_config, s.group, s.topic, 20)
        _delete_records_before(kafka_config, s.topic, 15)
        code, second = _run(tmp_path, s, name, "retained__2", spark, capfd)
        # 15-19 judged; the sink rows of the removed 10-14 match no record that can still be
        # read: each is unverifiable, and the partition's gap is one more unverifiable row.
        assert _judged(second) == {"delivered": 5, "unverifiable": 6}
        assert code == 1, "unverifiable is never silent without a max_unverifiable tolerance"
        [w] = second["windows"]
        assert (w["window_from"], w["log_start_offset"], w["window_to"]) == (10, 15, 20)
        gap = "offsets {} to {} were removed (retention or compaction) before they were read"
        assert _unverifiable_rows(name, "retained__2") == ([gap.format(10, 14)], ids[10:15])

        # 2. Log start above the committed offset: the consumer wrote 20-24 and committed 25;
        # retention removes everything below 27, pending 25 and 26 included.
        _produce(kafka_config, s.topic, [_json(m) for m in ids[20:30]])
        _sink_rows(pg_kwargs, s.table, ids[20:25])
        _commit(kafka_config, s.group, s.topic, 25)
        _delete_records_before(kafka_config, s.topic, 27)
        code, third = _run(tmp_path, s, name, "retained__3", spark, capfd)
        assert _judged(third) == {"pending": 3, "unverifiable": 6}
        # This window is [20, 25): 25 and 26 are reported by the window that reaches them.
        assert _unverifiable_rows(name, "retained__3") == ([gap.format(20, 24)], ids[20:25])

        # 3. The consumer skips the gap (its offset reset to the log start), writes 27-29 and
        # commits 30: the pending records are judged, the removed 25 and 26 reported once.
        _sink_rows(pg_kwargs, s.table, ids[27:30])
        _commit(kafka_config, s.group, s.topic, 30)
        code, fourth = _run(tmp_path, s, name, "retained__4", spark, capfd)
        assert _judged(fourth) == {"delivered": 3, "unverifiable": 1}
        assert _unverifiable_rows(name, "retained__4") == ([gap.format(25, 26)], [])
