"""Checks that a pipeline's declared connections, topic and sink table exist, before any work.

Each failure is one ``ReconError`` naming the pipeline and the key.
"""

from __future__ import annotations

from collections.abc import Mapping

from recon.config import PipelineConfig
from recon.connections import kafka_connection, postgres_connection
from recon.errors import ConfigError, ConnectionNotFound, ReconError, first_line


def get_pipeline(pipelines: Mapping[str, PipelineConfig], name: str) -> PipelineConfig:
    if name not in pipelines:
        known = ", ".join(sorted(pipelines)) or "none"
        raise ConfigError(f"no pipeline '{name}' is declared (declared: {known})")
    return pipelines[name]


def check_pipeline(cfg: PipelineConfig) -> None:
    """Resolve the connections and look at the topic and the sink table (and the columns a
    repair writes, when ``repair`` is declared, and the source table, when ``source`` is).

    :raises ReconError: the first problem, naming the pipeline and key.
    """
    import psycopg2

    from recon.read.sink import inspect_sink
    from recon.snapshot.offsets import (
        KafkaAuthFailed,
        KafkaUnreachable,
        admin_client,
        topic_partitions,
    )

    source = () if cfg.source is None else (("source.connection", cfg.source.connection),)
    for key, conn_id, resolve in (
        ("kafka.connection", cfg.kafka.connection, kafka_connection),
        ("sink.connection", cfg.sink.connection, postgres_connection),
        *((k, c, postgres_connection) for k, c in source),
    ):
        try:
            resolve(conn_id)
        except ConnectionNotFound as exc:
            raise ConnectionNotFound(f"pipeline '{cfg.name}': {key}: {exc}") from None
    kafka = kafka_connection(cfg.kafka.connection)
    try:
        topic_partitions(admin_client(kafka.config), cfg.kafka.topic)
    except KafkaAuthFailed as exc:
        # Not retried: the same credentials are refused again (fix the connection).
        raise KafkaAuthFailed(kafka.failure(cfg.name, exc)) from None
    except KafkaUnreachable as exc:
        raise KafkaUnreachable(kafka.failure(cfg.name, exc)) from None
    except ReconError as exc:
        raise ReconError(f"pipeline '{cfg.name}': kafka.topic: {exc}") from None
    sink = postgres_connection(cfg.sink.connection)
    try:
        pg = psycopg2.connect(connect_timeout=15, **sink.psycopg2_kwargs())
    except psycopg2.OperationalError as exc:
        raise ReconError(f"pipeline '{cfg.name}': sink.connection: {first_line(exc)}") from None
    try:
        inspect_sink(pg, cfg.sink, cfg.name, cfg.payload, cfg.order)
        if cfg.repair is not None:
            from recon.repair.planner import check_sink_columns
            from recon.repair.sink_rows import column_names

            check_sink_columns(cfg, column_names(pg, cfg.sink.table))
    finally:
        pg.close()
    if cfg.source is not None:
        _check_source(cfg)


def _check_source(cfg: PipelineConfig) -> None:
    """The source table and its declared columns exist (``source``)."""
    import psycopg2

    from recon.read.source import inspect_source
    from recon.services import source_db

    try:
        with source_db(cfg) as pg:
            inspect_source(pg, cfg)
    except psycopg2.OperationalError as exc:
        raise ReconError(f"pipeline '{cfg.name}': source.connection: {first_line(exc)}") from None
