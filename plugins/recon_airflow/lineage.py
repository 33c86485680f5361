"""OpenLineage datasets of a run's steps, for Airflow's OpenLineage provider.

Each step reads and writes named datasets, named by OpenLineage's conventions (the client's own
``openlineage.client.naming.dataset`` classes):

- the Kafka topic: namespace ``kafka://<first bootstrap host>:<port>``, name the topic;
- a PostgreSQL table: namespace ``postgres://<host>:<port>``, name ``<database>.<schema>.<table>``
  (the sink table; the results tables ``recon.runs``, ``recon.offset_snapshots`` and
  ``recon.discrepancies`` in the results database).

Airflow Assets (:func:`sink_asset_uri`): a pipeline's sink, named by its connection id and table
(``x-postgres://<connection id>/<schema>/<table>``), not by host and port: a DAG file names its
Assets when it is parsed, and connections are resolved by the tasks at run time only.

A namespace is built from a host and a port only, never from a connection's login, password or
URI: lineage events leave for a backend the pipeline's owner may not control.

The validate step adds a ``dataQualityAssertions`` facet to the results it read when the operator
holds the checkpoint's decision (``engine: local``, judged in the task's process); a Spark step's
decision stays in its spark-submit child, so its lineage has the datasets only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from airflow.providers.openlineage.extractors import OperatorLineage
from openlineage.client.event_v2 import Dataset, InputDataset, OutputDataset
from openlineage.client.facet_v2 import RunFacet
from openlineage.client.facet_v2 import data_quality_assertions_dataset as dq
from openlineage.client.naming.dataset import Kafka, Postgres

#: The datasets each step reads and writes, by role: ``topic`` and ``sink`` are the pipeline's,
#: the others tables of schema ``recon`` in the results database.
STEP_DATASETS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # Offsets and the consumer group's position, from the broker; the window fixed in the store.
    "snapshot_offsets": (("topic",), ("offset_snapshots", "runs")),
    # The window's records, read into the run's Parquet under the state folder (not a dataset
    # anyone else reads: its rows reach the results through reconcile).
    "snapshot_topic": (("topic",), ()),
    # The window's records joined with the sink's new rows: one verdict per message.
    "reconcile": (("topic", "sink"), ("runs", "discrepancies")),
    # The contract checked over the run's results; the decision recorded on the run's row.
    "validate": (("discrepancies",), ("runs",)),
}

RESULTS_SCHEMA = "recon"
DEFAULT_PG_SCHEMA = "public"


def kafka_dataset_naming(bootstrap_servers: str, topic: str) -> Kafka:
    """The topic's naming: the first bootstrap server's host and port (OpenLineage's rule).

    :param bootstrap_servers: ``host:port[,host:port...]``, maybe with a ``PROTOCOL://`` prefix.
    :param topic: the topic.
    """
    first = bootstrap_servers.split(",")[0].strip()
    # A listener prefix (SASL_SSL://) is no URL scheme urlsplit knows; it drops the user info
    # itself: only the host and the port reach the namespace.
    parts = urlsplit("//" + first.rpartition("://")[2])
    host = parts.hostname or ""  # empty: naming refuses it, and nothing else gets in
    return Kafka(bootstrap_server_host=host, port=str(parts.port or 9092), topic=topic)


def postgres_dataset_naming(host: str, port: int, database: str, table: str) -> Postgres:
    """A PostgreSQL table's naming; an unqualified table is in ``public``.

    :param host: the server's host.
    :param port: its port.
    :param database: the database the connection opens.
    :param table: ``schema.table`` or ``table``.
    """
    schema, _, name = table.rpartition(".")
    return Postgres(host=host, port=str(port), database=database,
                    schema=schema or DEFAULT_PG_SCHEMA, table=name)  # fmt: skip


#: The schemes of a sink's Asset URI (``x-``: schemes of this project's, which Airflow keeps as
#: they are): a PostgreSQL table, or a Kafka topic (a ``kind: kafka`` sink: a hop's target).
ASSET_SCHEME = "x-postgres"
KAFKA_ASSET_SCHEME = "x-kafka"


def sink_asset_uri(sink_connection: str, table: str, *, topic: str | None = None) -> str:
    """The URI of the Airflow Asset of a sink: ``x-postgres://<connection id>/<schema>/<table>``
    (an unqualified table in ``public``, as :func:`postgres_dataset_naming`), or
    ``x-kafka://<connection id>/<topic>`` for a topic.

    :param sink_connection: the sink's Airflow connection id (``sink.connection``).
    :param table: ``schema.table`` or ``table`` (``sink.table``; empty for a topic).
    :param topic: the sink's topic (``sink.topic`` of a ``kind: kafka`` sink).
    """
    if topic:
        return f"{KAFKA_ASSET_SCHEME}://{sink_connection}/{topic}"
    schema, _, name = table.rpartition(".")
    return f"{ASSET_SCHEME}://{sink_connection}/{schema or DEFAULT_PG_SCHEMA}/{name}"


def sink_asset(cfg: Any) -> Any:
    """The pipeline's sink (a table, or a hop's target topic) as an Airflow Asset: its
    reconciliation DAG's alert task emits it.

    :param cfg: a ``recon.config.PipelineConfig``.
    """
    from airflow.sdk import Asset

    sink = cfg.sink
    topic = sink.topic if sink.is_kafka else None
    return Asset(uri=sink_asset_uri(sink.connection, sink.table, topic=topic))


def _datasets(cfg: Any, results_conn_id: str) -> dict[str, Kafka | Postgres]:
    from recon.config.connections import kafka_connection, postgres_connection

    kafka = kafka_connection(cfg.kafka.connection)
    results = postgres_connection(results_conn_id)
    named: dict[str, Kafka | Postgres] = {
        "topic": kafka_dataset_naming(kafka.bootstrap_servers, cfg.kafka.topic),
    }
    if cfg.sink.is_kafka:  # a hop's target topic, on the sink connection's cluster
        target = kafka_connection(cfg.sink.connection)
        named["sink"] = kafka_dataset_naming(target.bootstrap_servers, cfg.sink.topic)
    else:
        sink = postgres_connection(cfg.sink.connection)
        named["sink"] = postgres_dataset_naming(sink.host, sink.port, sink.dbname, cfg.sink.table)
    for table in ("runs", "offset_snapshots", "discrepancies"):
        named[table] = postgres_dataset_naming(
            results.host, results.port, results.dbname, f"{RESULTS_SCHEMA}.{table}"
        )
    return named


def assertions_facet(
    semantics: str, passed: bool, failures: Sequence[Mapping[str, Any]]
) -> dq.DataQualityAssertionsDatasetFacet:
    """The checkpoint's decision as OpenLineage assertions: the claimed contract as a whole, then
    each rule it broke (with what was observed and allowed).

    :param semantics: the claimed semantic (``exactly_once``, ...).
    :param passed: the checkpoint's decision.
    :param failures: ``recon.validation.ValidationOutcome.failures``.
    """
    assertions = [dq.Assertion(assertion=f"{semantics}_contract", success=passed)]
    for failure in failures:
        assertions.append(
            dq.Assertion(
                assertion=str(failure.get("rule") or failure.get("expectation")),
                success=False,
                actual=None if failure.get("observed") is None else str(failure["observed"]),
                expected=None if failure.get("allowed") is None else str(failure["allowed"]),
            )
        )
    return dq.DataQualityAssertionsDatasetFacet(assertions=assertions)


def step_lineage(
    cfg: Any,
    step: str,
    results_conn_id: str,
    *,
    validation: tuple[bool, Sequence[Mapping[str, Any]]] | None = None,
) -> OperatorLineage[Dataset, RunFacet]:
    """The lineage of one step of a pipeline's run, its connections resolved as the step did.

    :param cfg: the pipeline (``recon.config.PipelineConfig``).
    :param step: a key of :data:`STEP_DATASETS`.
    :param results_conn_id: the results database's connection id.
    :param validation: ``(passed, failures)`` of the validate step when known in this process.
    :raises KeyError: for a step this module does not know.
    """
    reads, writes = STEP_DATASETS[step]
    named = _datasets(cfg, results_conn_id)
    facets: dict[str, Any] = {}
    if validation is not None:
        facets["dataQualityAssertions"] = assertions_facet(cfg.semantics, *validation)
    inputs: list[Dataset] = [
        InputDataset(
            namespace=named[r].get_namespace(), name=named[r].get_name(), inputFacets=dict(facets)
        )  # fmt: skip
        for r in reads
    ]
    outputs: list[Dataset] = [
        OutputDataset(namespace=named[w].get_namespace(), name=named[w].get_name()) for w in writes
    ]
    return OperatorLineage(inputs=inputs, outputs=outputs)
