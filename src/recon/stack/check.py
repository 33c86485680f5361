"""Reachability checks for the services a pipeline names (stack-check DAG, CLI)."""

from __future__ import annotations

from recon.config.connections import kafka_connection, postgres_connection
from recon.errors import ReconError


class ServiceUnreachable(ReconError):
    """A service named by a connection did not answer."""


def kafka_broker_count(conn_id: str, timeout: float = 10.0) -> int:
    """Number of brokers the Kafka connection ``conn_id`` sees.

    :param conn_id: Airflow connection id of the Kafka cluster.
    :param timeout: seconds to wait for metadata.
    """
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    conn = kafka_connection(conn_id)
    try:
        metadata = AdminClient(conn.config).list_topics(timeout=timeout)
    except KafkaException as exc:
        raise ServiceUnreachable(f"Kafka ({conn_id}) did not answer: {exc}") from None
    return len(metadata.brokers)


def postgres_server_version(conn_id: str) -> str:
    """The server version of the PostgreSQL connection ``conn_id``.

    :param conn_id: Airflow connection id of the database.
    """
    import psycopg2

    conn = postgres_connection(conn_id)
    try:
        with psycopg2.connect(connect_timeout=10, **conn.psycopg2_kwargs()) as pg:
            return str(pg.server_version)
    except psycopg2.OperationalError as exc:
        raise ServiceUnreachable(
            f"PostgreSQL ({conn_id}) at {conn.host}:{conn.port} did not answer: "
            f"{str(exc).strip().splitlines()[0]}"
        ) from None
