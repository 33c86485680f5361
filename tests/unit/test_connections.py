"""Connection ids resolve from AIRFLOW_CONN_* in both of Airflow's formats, without Airflow."""

from __future__ import annotations

import json

import pytest

from recon.connections import kafka_connection, postgres_connection, raw_connection
from recon.errors import ConnectionNotFound

pytestmark = pytest.mark.unit


def test_json_form(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_SINK_X",
        json.dumps(
            {
                "conn_type": "postgres",
                "host": "db",
                "port": 6543,
                "login": "u",
                "password": "p@ss",
                "schema": "sinkdb",
            }
        ),
    )
    conn = postgres_connection("sink_x")
    assert (conn.host, conn.port, conn.user, conn.password, conn.dbname) == (
        "db",
        6543,
        "u",
        "p@ss",
        "sinkdb",
    )
    assert conn.jdbc_url == "jdbc:postgresql://db:6543/sinkdb"
    assert "p@ss" not in repr(conn)


def test_uri_form_with_encoded_password(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SINK_Y", "postgres://u:p%40ss@db:6543/sinkdb")
    conn = postgres_connection("sink_y")
    assert (conn.user, conn.password, conn.dbname) == ("u", "p@ss", "sinkdb")


def test_kafka_extra_is_the_client_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_K",
        json.dumps(
            {
                "conn_type": "kafka",
                "extra": {"bootstrap.servers": "h:1", "security.protocol": "SASL_PLAINTEXT"},
            }
        ),
    )
    conn = kafka_connection("k")
    assert conn.bootstrap_servers == "h:1"
    assert conn.spark_options()["kafka.security.protocol"] == "SASL_PLAINTEXT"


def test_missing_connection_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_NOPE", raising=False)
    with pytest.raises(ConnectionNotFound, match="AIRFLOW_CONN_NOPE"):
        raw_connection("nope")


def test_kafka_without_bootstrap_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_K2", json.dumps({"conn_type": "kafka", "extra": {}}))
    with pytest.raises(ConnectionNotFound, match="bootstrap.servers"):
        kafka_connection("k2")
