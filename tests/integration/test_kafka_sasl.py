"""Kafka behind SASL (issue 8, security): the local broker's SASL_PLAINTEXT listener (mechanism
PLAIN, ``RECON_KAFKA_SASL_PORT``, user ``RECON_KAFKA_SASL_USER``, password in
``.state/secrets.env``) refuses anonymous clients; a pipeline whose connection carries the
credentials in its extras reconciles through it end to end (the AdminClient snapshot and Spark's
Java client both authenticate) without the password showing up anywhere a person looks; a wrong
password is one clear line, exit status 2, at once.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from faultkit import STATE, recon_command, synthetic

from recon.run.steps import results_db

pytestmark = pytest.mark.integration

CONN_ID = "kafka_sasl"
EXIT_OK, EXIT_USER_ERROR = 0, 2


def _port() -> int:
    return int(os.environ.get("RECON_KAFKA_SASL_PORT", "23096"))


@pytest.fixture(scope="module")
def sasl() -> dict[str, str]:
    """The listener's address and credentials, from the project's environment."""
    password = os.environ.get("RECON_KAFKA_SASL_PASSWORD")
    if not password:
        pytest.fail("RECON_KAFKA_SASL_PASSWORD is not set: run `make setup` and load "
                    "the environment with scripts/with-env.sh", pytrace=False)  # fmt: skip
    return {
        "bootstrap.servers": f"127.0.0.1:{_port()}",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": os.environ.get("RECON_KAFKA_SASL_USER", "recon"),
        "sasl.password": password,
    }


def _env_with(extra: dict[str, str]) -> dict[str, str]:
    """This process's environment plus ``AIRFLOW_CONN_KAFKA_SASL`` (JSON, as Airflow takes it)."""
    conn = {"conn_type": "kafka", "extra": extra}
    return {**os.environ, "AIRFLOW_CONN_" + CONN_ID.upper(): json.dumps(conn)}


def _leaks(secret: str, text: str | bytes) -> bool:
    data = text.encode() if isinstance(text, str) else text
    return secret.encode() in data


def test_anonymous_client_is_refused(sasl: dict[str, str]) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    from recon.snapshot.offsets import admin_client

    quiet = {"log_level": 0}  # the refusals librdkafka would log are what the test expects
    anonymous = AdminClient({"bootstrap.servers": sasl["bootstrap.servers"], **quiet})
    with pytest.raises(KafkaException):
        anonymous.list_topics(timeout=5)
    # Wrong password: refused, and the refusal is recognised as one.
    wrong = admin_client({**sasl, "sasl.password": "not-" + sasl["sasl.password"]})
    with pytest.raises(KafkaException):
        wrong.list_topics(timeout=3)
    assert wrong.refusal() is not None
    # The listener is a real one: the right credentials get the cluster's metadata.
    assert admin_client(sasl).list_topics(timeout=15).brokers


def _text_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and p.suffix not in (".parquet", ".crc")]


def test_run_through_sasl_connection(
    tmp_path: Path, kafka_config: dict[str, str], pg_kwargs: dict[str, Any], sasl: dict[str, str]
) -> None:
    name = f"sasl_{uuid.uuid4().hex[:8]}"
    password = sasl["sasl.password"]
    with synthetic(kafka_config, pg_kwargs, 240, name, partitions=2, pending=10,
                   lost_every=10**9, dup_every=40) as s:  # fmt: skip
        assert s.expected == {"delivered": 225, "lost": 0, "duplicated": 5, "pending": 10}
        pipelines = tmp_path / "pipelines.yaml"
        pipelines.write_text(s.pipelines_yaml(name, kafka_conn=CONN_ID))
        data_dir = tmp_path / "data"
        run_id = f"sasl__{uuid.uuid4().hex[:6]}"
        result = subprocess.run(recon_command(pipelines, name, run_id, data_dir),
                                capture_output=True, text=True, timeout=600,
                                env=_env_with(sasl))  # fmt: skip
        assert result.returncode == EXIT_OK, result.stderr[-3000:]
        summary = json.loads(result.stdout)
        judged = {k: v for k, v in summary["counts"].items() if v}
        assert judged == {k: v for k, v in s.expected.items() if v}

        assert not _leaks(password, result.stdout), "the password is in stdout"
        assert not _leaks(password, result.stderr), "the password is in stderr"
        with results_db() as pg, pg.cursor() as cur:
            for table in ("runs", "offset_snapshots", "discrepancies"):
                cur.execute(f"SELECT t::text FROM recon.{table} t WHERE pipeline = %s", (name,))
                rows = [r[0] for r in cur.fetchall()]
                assert rows or table == "discrepancies", f"no rows of the run in recon.{table}"
                assert not any(_leaks(password, r) for r in rows), f"password in recon.{table}"
        files = _text_files(data_dir)
        assert files, "the run wrote no files"
        for place in (data_dir, STATE / "gx"):
            found = [str(p) for p in _text_files(place) if _leaks(password, p.read_bytes())]
            assert not found, f"the password is in {found}"


@pytest.mark.parametrize("command", ["run", "check-config"])
def test_wrong_password_is_one_line_at_once(
    tmp_path: Path, sasl: dict[str, str], command: str
) -> None:
    wrong = "Wrong" + uuid.uuid4().hex[:12]
    pipelines = tmp_path / "pipelines.yaml"
    # The topic and table need not exist: the Kafka connection is checked first.
    pipelines.write_text(
        "pipelines:\n  sasl_wrong:\n    semantics: exactly_once\n    schedule: null\n"
        "    settle_seconds: 0\n    kafka: {connection: kafka_sasl, topic: sasl-any, "
        "consumer_group: g, message_id: {header: message_id}}\n"
        "    sink: {connection: postgres_sink, table: public.sasl_any, message_id_column: m}\n"
    )
    args = (
        ["run", "--pipeline", "sasl_wrong"] if command == "run" else ["check-config", "--connect"]
    )
    started = time.monotonic()
    result = subprocess.run(["recon", "--pipelines", str(pipelines), *args],
                            capture_output=True, text=True, timeout=300,
                            env=_env_with({**sasl, "sasl.password": wrong}))  # fmt: skip
    elapsed = time.monotonic() - started
    assert result.returncode == EXIT_USER_ERROR, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert lines[0].startswith(
        "recon: error: pipeline 'sasl_wrong': kafka.connection: 'kafka_sasl'"
    )
    assert "refused the connection's credentials" in lines[0]
    for secret in (wrong, sasl["sasl.password"]):
        assert not _leaks(secret, result.stdout + result.stderr)
    # Not retried like a restarting broker (120 s): the refusal is the answer.
    # Far below that even on a slow machine: what is checked is that no retry loop ran.
    assert elapsed < 100, f"took {elapsed:.0f} s"


def test_reader_with_refused_credentials_fails_as_refused(sasl: dict[str, str]) -> None:
    """Credentials changed between the offset snapshot and the read: librdkafka reports the
    refusal only to the consumer's error callback, and the read ends with it instead of waiting
    out its stall (120 s) and blaming the broker."""
    from recon.config import MessageIdSpec
    from recon.read.kafka_local.reader import read_tables
    from recon.read.kafka_local.task import ReadTask
    from recon.read.ranges import OffsetRange
    from recon.snapshot.offsets import KafkaAuthFailed

    wrong = {**sasl, "sasl.password": "not-" + sasl["sasl.password"]}
    task = ReadTask(
        config=wrong,
        ranges=(OffsetRange("sasl-any", 0, 0, 10),),
        isolation_level="read_committed",
        spec=MessageIdSpec("json_field", "id"),
    )
    with pytest.raises(KafkaAuthFailed, match="refused the connection's credentials") as caught:
        list(read_tables(task))
    assert sasl["sasl.password"] not in str(caught.value)
