"""User mistakes get one clear line naming the pipeline and key, exit status 2, no traceback."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg2
import pytest

pytestmark = pytest.mark.integration

TEMPLATE = """
pipelines:
  p1:
    semantics: exactly_once
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
    values = {"kafka_conn": "kafka_default", "column": "message_id", **fields}
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
        result = _recon(tmp_path, "run", "--pipeline", "p1", "--data-dir", str(tmp_path / "d"),
                        topic=topic, table=sink_table)  # fmt: skip
        # Nothing committed by the group: the record is pending, nothing is judged or broken.
        assert result.returncode == 0, result.stderr[-2000:]
        assert "pending=1" in result.stdout and "delivered=0" in result.stdout
    finally:
        from recon.engine import results_db
        from recon.store import forget_pipeline

        with results_db() as pg:
            forget_pipeline(pg, "p1")
