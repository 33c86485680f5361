"""Connections through Airflow, for the operators: ``recon`` resolves a connection id through
Airflow's ``BaseHook.get_connection`` in a task's process (:func:`use_airflow_connections`), and
outside a task too, for an id without an ``AIRFLOW_CONN_*`` variable (the entry point
``recon.connection_resolvers``: the CLI finds what Airflow's secrets backend holds), and
a spark-submit child, which cannot ask Airflow, gets the connections as ``AIRFLOW_CONN_*``
variables (:func:`connections_env`). The IO itself (Kafka, PostgreSQL) is ``recon``'s own.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseHook


def airflow_raw_connection(conn_id: str) -> Any:
    """An Airflow connection as ``recon.config.connections.RawConnection`` (secrets stay masked
    in logs):
    in a task through the API server; elsewhere (the CLI) from the secrets backend of Airflow's
    configuration and ``AIRFLOW_CONN_*`` (the entry point ``recon.connection_resolvers``).

    :param conn_id: the Airflow connection id.
    :raises recon.errors.ConnectionNotFound: when Airflow has no such connection.
    """
    from airflow.sdk.exceptions import AirflowNotFoundException

    from recon.config.connections import RawConnection, env_variable
    from recon.errors import ConnectionNotFound

    try:
        conn = BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        raise ConnectionNotFound(
            f"connection '{conn_id}' is not defined: create it in Airflow (its metadata "
            f"database or its secrets backend) or set {env_variable(conn_id)}"
        ) from None
    return RawConnection.from_airflow(conn_id, conn)


def use_airflow_connections() -> None:
    """Make ``recon`` resolve connection ids through Airflow in this process."""
    from recon.config.connections import set_resolver

    set_resolver(airflow_raw_connection)


def connections_env(conn_ids: list[str]) -> dict[str, str]:
    """``AIRFLOW_CONN_*`` variables for a child process (spark-submit) that cannot ask Airflow.

    :param conn_ids: the connection ids the child resolves.
    """
    from recon.config.connections import connection_env

    return dict(connection_env(airflow_raw_connection(c)) for c in conn_ids)
