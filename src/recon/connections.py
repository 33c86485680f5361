"""Connections by Airflow connection id, resolved without importing Airflow.

Outside Airflow (the CLI, tests, Spark jobs) a connection id ``kafka_default`` is read from the
environment variable ``AIRFLOW_CONN_KAFKA_DEFAULT``, in either of Airflow's two formats (JSON or
URI), so the same id means the same thing inside and outside Airflow. Inside Airflow the plugin's
hooks build the same dataclasses from ``BaseHook.get_connection``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from recon.errors import ConnectionNotFound


@dataclass(frozen=True)
class RawConnection:
    """The parts of an Airflow connection this product uses."""

    conn_id: str
    conn_type: str
    host: str | None = None
    port: int | None = None
    login: str | None = None
    password: str | None = field(default=None, repr=False)
    schema: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PostgresConnection:
    conn_id: str
    host: str
    port: int
    user: str
    password: str | None = field(repr=False)
    dbname: str

    def psycopg2_kwargs(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password,
            "dbname": self.dbname,
        }

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{self.dbname}"

    def jdbc_properties(self) -> dict[str, str]:
        props = {"user": self.user, "driver": "org.postgresql.Driver"}
        if self.password is not None:
            props["password"] = self.password
        return props


#: librdkafka client settings, as confluent-kafka's clients take them.
ClientConfig = dict[str, str | int | float | bool]


@dataclass(frozen=True)
class KafkaConnection:
    conn_id: str
    config: ClientConfig = field(repr=False)

    @property
    def bootstrap_servers(self) -> str:
        return str(self.config["bootstrap.servers"])

    def spark_options(self) -> dict[str, str]:
        """The connection's client settings as Spark Kafka source options (``kafka.`` prefix)."""
        return {f"kafka.{k}": str(v) for k, v in self.config.items()}


def _env_name(conn_id: str) -> str:
    return "AIRFLOW_CONN_" + conn_id.upper()


Resolver = Callable[[str], RawConnection]
_resolver: Resolver | None = None


def set_resolver(resolver: Resolver | None) -> None:
    """Resolve connection ids another way (the Airflow plugin registers Airflow's own lookup);
    ``None`` restores the environment lookup."""
    global _resolver
    _resolver = resolver


def raw_connection(conn_id: str) -> RawConnection:
    """Resolve connection ``conn_id``: the registered resolver, else ``AIRFLOW_CONN_<ID>``.

    :raises ConnectionNotFound: when the connection is absent or unreadable.
    """
    if _resolver is not None:
        return _resolver(conn_id)
    return env_connection(conn_id)


def env_connection(conn_id: str) -> RawConnection:
    """Read connection ``conn_id`` from ``AIRFLOW_CONN_<ID>`` (JSON or URI form).

    :raises ConnectionNotFound: when the variable is absent or unreadable.
    """
    value = os.environ.get(_env_name(conn_id))
    if not value:
        raise ConnectionNotFound(
            f"connection '{conn_id}' is not defined: set {_env_name(conn_id)} "
            "or create it in Airflow"
        )
    value = value.strip()
    if value.startswith("{"):
        try:
            data = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ConnectionNotFound(
                f"connection '{conn_id}': {_env_name(conn_id)} is not valid JSON ({exc.msg})"
            ) from None
        json_extra = data.get("extra") or {}
        if isinstance(json_extra, str):
            json_extra = json.loads(json_extra) if json_extra else {}
        return RawConnection(
            conn_id=conn_id,
            conn_type=str(data.get("conn_type", "")),
            host=data.get("host"),
            port=int(data["port"]) if data.get("port") else None,
            login=data.get("login"),
            password=data.get("password"),
            schema=data.get("schema"),
            extra=dict(json_extra),
        )
    parts = urlsplit(value)
    query = dict(parse_qsl(parts.query))
    extra_json = query.pop("__extra__", None)
    uri_extra: dict[str, Any] = json.loads(extra_json) if extra_json else dict(query)
    return RawConnection(
        conn_id=conn_id,
        conn_type=parts.scheme.replace("-", "_"),
        host=unquote(parts.hostname) if parts.hostname else None,
        port=parts.port,
        login=unquote(parts.username) if parts.username else None,
        password=unquote(parts.password) if parts.password else None,
        schema=unquote(parts.path.lstrip("/")) or None,
        extra=uri_extra,
    )


def postgres_from_raw(raw: RawConnection) -> PostgresConnection:
    if not raw.host or not raw.login or not raw.schema:
        raise ConnectionNotFound(
            f"connection '{raw.conn_id}' needs host, login and schema (the database name)"
        )
    return PostgresConnection(
        conn_id=raw.conn_id,
        host=raw.host,
        port=raw.port or 5432,
        user=raw.login,
        password=raw.password,
        dbname=raw.schema,
    )


def kafka_from_raw(raw: RawConnection) -> KafkaConnection:
    config: ClientConfig = {str(k): str(v) for k, v in raw.extra.items()}
    if "bootstrap.servers" not in config:
        if raw.host:
            config["bootstrap.servers"] = f"{raw.host}:{raw.port or 9092}"
        else:
            raise ConnectionNotFound(
                f"connection '{raw.conn_id}' has no 'bootstrap.servers' in its extra"
            )
    return KafkaConnection(conn_id=raw.conn_id, config=config)


def postgres_connection(conn_id: str) -> PostgresConnection:
    return postgres_from_raw(raw_connection(conn_id))


def kafka_connection(conn_id: str) -> KafkaConnection:
    return kafka_from_raw(raw_connection(conn_id))


def connection_env(raw: RawConnection) -> tuple[str, str]:
    """``(AIRFLOW_CONN_<ID>, JSON)`` for handing a resolved connection to a child process."""
    payload = {
        "conn_type": raw.conn_type,
        "host": raw.host,
        "port": raw.port,
        "login": raw.login,
        "password": raw.password,
        "schema": raw.schema,
        "extra": raw.extra,
    }
    return _env_name(raw.conn_id), json.dumps({k: v for k, v in payload.items() if v is not None})
