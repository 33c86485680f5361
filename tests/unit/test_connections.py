"""Connection ids resolve from AIRFLOW_CONN_* in both of Airflow's formats, without Airflow."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from recon.config.connections import (
    RawConnection,
    java_client_config,
    kafka_connection,
    postgres_connection,
    postgres_from_raw,
    raw_connection,
)
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


def test_postgres_tls_extras_reach_both_drivers(monkeypatch: pytest.MonkeyPatch) -> None:
    """sslmode & co. in the extras (Airflow's Postgres provider's names) go to psycopg2 and to the
    JDBC driver (which has no sslcrl); the key's passphrase is a secret like the password."""
    extra = {"sslmode": "verify-full", "sslrootcert": "/ca.pem", "sslcert": "/c.pem",
             "sslkey": "/c.key", "sslpassword": "k3y-pass", "sslcrl": "/crl.pem",
             "unrelated": "x"}  # fmt: skip
    monkeypatch.setenv(
        "AIRFLOW_CONN_SINK_TLS",
        json.dumps(
            {
                "conn_type": "postgres",
                "host": "db",
                "login": "u",
                "password": "p",
                "schema": "s",
                "extra": extra,
            }
        ),  # fmt: skip
    )
    conn = postgres_connection("sink_tls")
    kwargs = conn.psycopg2_kwargs()
    assert {k: kwargs[k] for k in extra if k in kwargs} == {
        k: v for k, v in extra.items() if k != "unrelated"
    }
    props = conn.jdbc_properties()
    assert props["sslmode"] == "verify-full" and props["sslrootcert"] == "/ca.pem"
    assert "sslcrl" not in props and "unrelated" not in props
    assert conn.secrets == ["p", "k3y-pass"]
    assert "k3y-pass" not in repr(conn)


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


def test_sasl_credentials_become_a_jaas_line_for_spark() -> None:
    config = {
        "bootstrap.servers": "h:1", "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "app", "sasl.password": 'p"w\\x',
    }  # fmt: skip
    java = java_client_config(config)
    assert "sasl.username" not in java and "sasl.password" not in java
    assert java["sasl.mechanism"] == "SCRAM-SHA-512"
    assert java["sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="app" password="p\\"w\\\\x";'
    )
    assert java["security.protocol"] == "SASL_PLAINTEXT"


def test_explicit_jaas_config_wins_and_unknown_mechanism_is_an_error() -> None:
    given = {"bootstrap.servers": "h:1", "sasl.username": "a", "sasl.jaas.config": "X required;"}
    assert java_client_config(given)["sasl.jaas.config"] == "X required;"
    with pytest.raises(ConnectionNotFound, match="GSSAPI"):
        java_client_config({"sasl.mechanism": "GSSAPI", "sasl.username": "a"})


def test_connection_login_is_the_sasl_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_K3",
        json.dumps({"conn_type": "kafka", "login": "u", "password": "s3cret",
                    "extra": {"bootstrap.servers": "h:1", "sasl.mechanism": "PLAIN"}}),
    )  # fmt: skip
    conn = kafka_connection("k3")
    assert conn.config["sasl.username"] == "u" and conn.config["sasl.password"] == "s3cret"
    assert "s3cret" not in repr(conn)
    assert 'password="s3cret"' in conn.spark_options()["kafka.sasl.jaas.config"]


def test_pem_ca_file_becomes_a_pem_truststore() -> None:
    java = java_client_config({"bootstrap.servers": "h:1", "ssl.ca.location": "/etc/ca.pem",
                               "enable.ssl.certificate.verification": "false"})  # fmt: skip
    assert java["ssl.truststore.type"] == "PEM"
    assert java["ssl.truststore.location"] == "/etc/ca.pem"
    assert java["ssl.endpoint.identification.algorithm"] == ""
    assert "ssl.ca.location" not in java


def test_an_airflow_connection_object_becomes_a_raw_connection() -> None:
    """What the task SDK's and the models' ``Connection`` objects share is all that is read."""
    conn = SimpleNamespace(
        conn_type=None, host="db.internal", port=5433, login="u", password="p w",
        schema="sink", extra_dejson={"sslmode": "require"},
    )  # fmt: skip
    raw = RawConnection.from_airflow("pg_x", conn)
    assert raw == RawConnection(
        conn_id="pg_x", conn_type="", host="db.internal", port=5433, login="u", password="p w",
        schema="sink", extra={"sslmode": "require"},
    )  # fmt: skip
    assert "p w" not in repr(raw)
    kwargs = postgres_from_raw(raw).psycopg2_kwargs()
    assert (kwargs["host"], kwargs["dbname"]) == ("db.internal", "sink")
    assert kwargs["sslmode"] == "require"
