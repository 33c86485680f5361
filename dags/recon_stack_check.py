"""A DAG that proves Airflow reaches the project's Kafka and sink database through its connections.

It only wires tasks; the clients are imported inside them so parsing stays fast.
"""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import dag, task


@dag(
    dag_id="recon_stack_check",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    tags=["recon", "stack"],
    default_args={"retries": 1},
    doc_md=__doc__,
)
def recon_stack_check() -> None:
    @task
    def kafka_reachable(conn_id: str = "kafka_default") -> int:
        from recon.stack.check import kafka_broker_count

        return kafka_broker_count(conn_id)

    @task
    def sink_reachable(conn_id: str = "postgres_sink") -> str:
        from recon.stack.check import postgres_server_version

        return postgres_server_version(conn_id)

    kafka_reachable()
    sink_reachable()


recon_stack_check()
