"""Connections by Airflow connection id, resolved without importing Airflow when it need not be.

A connection id ``kafka_default`` is resolved, in this order:

1. by the resolver a process registered (:func:`set_resolver`): in an Airflow task, the plugin's
   ``BaseHook.get_connection`` (``recon_airflow.hooks``), so every place Airflow keeps
   connections works: its metadata database, its secrets backend, ``AIRFLOW_CONN_*``;
2. else from the environment variable ``AIRFLOW_CONN_KAFKA_DEFAULT``, in either of Airflow's two
   formats (JSON or URI), so the same id means the same thing inside and outside Airflow (the CLI,
   tests, spark-submit children, which get their connections that way);
3. else, where Airflow is installed, through Airflow's own lookup (the resolver the installed
   packages register in the entry point group :data:`RESOLVER_GROUP`: the wheel's
   ``recon_airflow``), which outside a scheduler asks the secrets backend of Airflow's
   configuration (Vault, AWS or GCP secret managers, a local file): the CLI finds what the tasks
   find. Importing Airflow costs a process 2-5 s, which a variable that is set never pays; an
   id both set as a variable and held by a backend resolves to the variable here, to the
   backend in Airflow (which asks its backend first).
"""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from recon.errors import ConnectionNotFound

log = logging.getLogger(__name__)


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

    @classmethod
    def from_airflow(cls, conn_id: str, conn: Any) -> RawConnection:
        """The parts of an Airflow ``Connection`` (the task SDK's or the models' one: both have
        these attributes), without importing Airflow.

        :param conn_id: the connection's id.
        :param conn: the Airflow connection object.
        """
        return cls(
            conn_id=conn_id, conn_type=conn.conn_type or "", host=conn.host, port=conn.port,
            login=conn.login, password=conn.password, schema=conn.schema,
            extra=dict(conn.extra_dejson),
        )  # fmt: skip


#: libpq's TLS settings, read from a PostgreSQL connection's extras (as Airflow's Postgres
#: provider passes them on). The JDBC driver knows the same names, except ``sslcrl``.
PG_TLS_SETTINGS = ("sslmode", "sslrootcert", "sslcert", "sslkey", "sslpassword", "sslcrl")
_JDBC_TLS_SETTINGS = ("sslmode", "sslrootcert", "sslcert", "sslkey", "sslpassword")


@dataclass(frozen=True)
class PostgresConnection:
    conn_id: str
    host: str
    port: int
    user: str
    password: str | None = field(repr=False)
    dbname: str
    #: the connection's TLS settings (``PG_TLS_SETTINGS``) from its extras
    tls: dict[str, str] = field(default_factory=dict, repr=False)

    def psycopg2_kwargs(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password,
            "dbname": self.dbname,
            **self.tls,
        }

    @property
    def secrets(self) -> list[str]:
        """What must never appear in a message: the password and the key's passphrase."""
        return [s for s in (self.password, self.tls.get("sslpassword")) if s]

    @property
    def jdbc_url(self) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{self.dbname}"

    def jdbc_properties(self) -> dict[str, str]:
        props = {"user": self.user, "driver": "org.postgresql.Driver"}
        if self.password is not None:
            props["password"] = self.password
        props.update({k: v for k, v in self.tls.items() if k in _JDBC_TLS_SETTINGS})
        return props


#: librdkafka client settings, as confluent-kafka's clients take them.
ClientConfig = dict[str, str | int | float | bool]

#: Settings whose values are secrets: never part of an error message.
SECRET_SETTINGS = ("sasl.password", "ssl.key.password", "ssl.keystore.password",
                   "ssl.truststore.password", "sasl.oauthbearer.client.secret")  # fmt: skip


def scrub(text: str, config: Mapping[str, Any]) -> str:
    """``text`` with the value of every secret setting of ``config`` masked."""
    for key in SECRET_SETTINGS:
        secret = config.get(key)
        if secret and str(secret) in text:
            text = text.replace(str(secret), "***")
    return text


@dataclass(frozen=True)
class KafkaConnection:
    conn_id: str
    config: ClientConfig = field(repr=False)

    @property
    def bootstrap_servers(self) -> str:
        return str(self.config["bootstrap.servers"])

    def where(self, pipeline: str) -> str:
        """Where a Kafka failure happened, for the first words of its one-line message."""
        return (
            f"pipeline '{pipeline}': kafka.connection: '{self.conn_id}' at {self.bootstrap_servers}"
        )

    def failure(self, pipeline: str, exc: BaseException) -> str:
        """A Kafka failure's one-line message: where it happened, then its text with every
        secret of the connection masked."""
        return f"{self.where(pipeline)}: {scrub(str(exc), self.config)}"

    def spark_options(self) -> dict[str, str]:
        """The connection's client settings as Spark Kafka source options (``kafka.`` prefix).

        The extras use librdkafka's names (as Airflow's Kafka provider does); Spark's source is the
        Java client, so SASL credentials become a JAAS line and PEM files a PEM trust/key store.
        """
        return {f"kafka.{k}": v for k, v in java_client_config(self.config).items()}


#: librdkafka settings whose Java client name differs.
_JAVA_NAMES = {"sasl.mechanisms": "sasl.mechanism"}
#: librdkafka-only settings: translated below or meaningless to the Java client.
_LIBRDKAFKA_ONLY = frozenset(
    {
        "sasl.username", "sasl.password", "ssl.ca.location", "ssl.certificate.location",
        "ssl.key.location", "ssl.key.password", "enable.ssl.certificate.verification",
        "client.id", "debug", "socket.keepalive.enable", "statistics.interval.ms",
    }
)  # fmt: skip
_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


def _jaas_quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def java_client_config(config: ClientConfig) -> dict[str, str]:
    """librdkafka client settings -> the Java client's, for Spark's Kafka source.

    :param config: settings with librdkafka names, as a Kafka connection's extra holds them.
    :raises ConnectionNotFound: SASL credentials for a mechanism without a username/password
        login module (give ``sasl.jaas.config`` for those).
    """
    java: dict[str, str] = {}
    for key, value in config.items():
        if key not in _LIBRDKAFKA_ONLY:
            java[_JAVA_NAMES.get(key, key)] = str(value)
    username, password = config.get("sasl.username"), config.get("sasl.password")
    if username is not None and "sasl.jaas.config" not in java:
        mechanism = str(java.get("sasl.mechanism", "PLAIN")).upper()
        module = _LOGIN_MODULES.get(mechanism)
        if module is None:
            raise ConnectionNotFound(
                f"SASL mechanism '{mechanism}' takes no username/password: put the Java client's "
                "'sasl.jaas.config' in the connection's extra"
            )
        java["sasl.mechanism"] = mechanism
        java["sasl.jaas.config"] = (
            f"{module} required username={_jaas_quoted(str(username))} "
            f"password={_jaas_quoted(str(password or ''))};"
        )
    if "ssl.ca.location" in config:
        java["ssl.truststore.type"] = "PEM"
        java["ssl.truststore.location"] = str(config["ssl.ca.location"])
    if "ssl.certificate.location" in config and "ssl.key.location" in config:
        # The Java client's PEM key store takes the chain and key inline, not as file names.
        with open(str(config["ssl.certificate.location"]), encoding="utf-8") as cert:
            java["ssl.keystore.certificate.chain"] = cert.read()
        with open(str(config["ssl.key.location"]), encoding="utf-8") as key_file:
            java["ssl.keystore.key"] = key_file.read()
        java["ssl.keystore.type"] = "PEM"
        if "ssl.key.password" in config:
            java["ssl.key.password"] = str(config["ssl.key.password"])
    if str(config.get("enable.ssl.certificate.verification", "true")).lower() == "false":
        java["ssl.endpoint.identification.algorithm"] = ""
    return java


def env_variable(conn_id: str) -> str:
    """The environment variable that holds connection ``conn_id``: ``AIRFLOW_CONN_<ID>``."""
    return "AIRFLOW_CONN_" + conn_id.upper()


Resolver = Callable[[str], RawConnection]
_resolver: Resolver | None = None
#: The entry point group of installed resolvers (``name = "module:function"``, the function a
#: :data:`Resolver`); the wheel registers ``recon_airflow.hooks:airflow_raw_connection``.
RESOLVER_GROUP = "recon.connection_resolvers"


def set_resolver(resolver: Resolver | None) -> None:
    """Resolve connection ids another way (the Airflow plugin registers Airflow's own lookup);
    ``None`` restores the environment lookup."""
    global _resolver
    _resolver = resolver


def raw_connection(conn_id: str) -> RawConnection:
    """Resolve connection ``conn_id``: the registered resolver, else ``AIRFLOW_CONN_<ID>``, else
    an installed resolver (Airflow's secrets backends), in that order (see the module).

    :raises ConnectionNotFound: when the connection is absent or unreadable.
    """
    if _resolver is not None:
        return _resolver(conn_id)
    if os.environ.get(env_variable(conn_id)):
        return env_connection(conn_id)
    installed = installed_resolver()
    if installed is not None:
        from recon.config.entry_points import plugin_output

        with plugin_output():
            return installed(conn_id)
    return env_connection(conn_id)


@functools.cache
def installed_resolver() -> Resolver | None:
    """The first resolver of :data:`RESOLVER_GROUP` (by name) whose module imports, or None (no
    such package, or Airflow not installed: ``pip install kafka-recon`` without its extra)."""
    from recon.config.entry_points import first_loadable

    resolver: Resolver | None = first_loadable(
        RESOLVER_GROUP, "the AIRFLOW_CONN_* variables alone are read"
    )
    return resolver


def env_connection(conn_id: str) -> RawConnection:
    """Read connection ``conn_id`` from ``AIRFLOW_CONN_<ID>`` (JSON or URI form).

    :raises ConnectionNotFound: when the variable is absent or unreadable.
    """
    value = os.environ.get(env_variable(conn_id))
    if not value:
        raise ConnectionNotFound(
            f"connection '{conn_id}' is not defined: set {env_variable(conn_id)} "
            "or create it in Airflow"
        )
    value = value.strip()
    if value.startswith("{"):
        try:
            data = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ConnectionNotFound(
                f"connection '{conn_id}': {env_variable(conn_id)} is not valid JSON ({exc.msg})"
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
        tls={k: str(raw.extra[k]) for k in PG_TLS_SETTINGS if raw.extra.get(k) is not None},
    )


def kafka_from_raw(raw: RawConnection) -> KafkaConnection:
    config: ClientConfig = {str(k): str(v) for k, v in raw.extra.items()}
    # The connection's own login/password fields are SASL credentials: Airflow masks them.
    if raw.login and "sasl.username" not in config:
        config["sasl.username"] = raw.login
        if raw.password:
            config["sasl.password"] = raw.password
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
    present = {k: v for k, v in payload.items() if v is not None}
    return env_variable(raw.conn_id), json.dumps(present)
