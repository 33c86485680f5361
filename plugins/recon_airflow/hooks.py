"""Hooks that own the connections a pipeline names, resolved through Airflow at run time."""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseHook


def airflow_raw_connection(conn_id: str) -> Any:
    """An Airflow connection as ``recon.connections.RawConnection`` (secrets stay masked in logs).

    :param conn_id: the Airflow connection id.
    :raises recon.errors.ConnectionNotFound: when Airflow has no such connection.
    """
    from airflow.exceptions import AirflowNotFoundException

    from recon.connections import RawConnection
    from recon.errors import ConnectionNotFound

    try:
        conn = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        raise ConnectionNotFound(f"connection '{conn_id}' is not defined in Airflow") from None
    return RawConnection(
        conn_id=conn_id,
        conn_type=conn.conn_type or "",
        host=conn.host,
        port=conn.port,
        login=conn.login,
        password=conn.password,
        schema=conn.schema,
        extra=dict(conn.extra_dejson),
    )


def use_airflow_connections() -> None:
    """Make ``recon`` resolve connection ids through Airflow in this process."""
    from recon.connections import set_resolver

    set_resolver(airflow_raw_connection)


class ReconKafkaHook(BaseHook):
    """The pipeline's Kafka cluster. The connection's extra is the librdkafka config
    (``bootstrap.servers`` and any SASL/SSL settings), passed through unchanged.

    :param kafka_conn_id: Airflow connection id.
    """

    conn_name_attr = "kafka_conn_id"
    default_conn_name = "kafka_default"
    conn_type = "kafka"
    hook_name = "Kafka (delivery reconciliation)"

    def __init__(self, kafka_conn_id: str = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kafka_conn_id = kafka_conn_id

    def get_conn(self) -> Any:
        from recon.connections import kafka_from_raw

        return kafka_from_raw(airflow_raw_connection(self.kafka_conn_id))


class ReconPostgresHook(BaseHook):
    """A PostgreSQL database: a pipeline's sink, or the results database (schema ``recon``).

    :param postgres_conn_id: Airflow connection id.
    """

    conn_name_attr = "postgres_conn_id"
    default_conn_name = "postgres_recon"
    conn_type = "postgres"
    hook_name = "PostgreSQL (delivery reconciliation)"

    def __init__(self, postgres_conn_id: str = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.postgres_conn_id = postgres_conn_id

    def get_conn(self) -> Any:
        import psycopg2

        from recon.connections import postgres_from_raw

        conn = postgres_from_raw(airflow_raw_connection(self.postgres_conn_id))
        return psycopg2.connect(connect_timeout=15, **conn.psycopg2_kwargs())


def connections_env(conn_ids: list[str]) -> dict[str, str]:
    """``AIRFLOW_CONN_*`` variables for a child process (spark-submit) that cannot ask Airflow.

    :param conn_ids: the connection ids the child resolves.
    """
    from recon.connections import connection_env

    return dict(connection_env(airflow_raw_connection(c)) for c in conn_ids)
