"""Checks that a pipeline's declared connections, topic and sink table exist, before any work.

Each failure is one ``ReconError`` naming the pipeline and the key.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from recon.config import PipelineConfig
from recon.config.connections import kafka_connection, postgres_connection
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

    if cfg.sink.is_kafka:
        _check_kafka_sink(cfg)
        return
    source: tuple[tuple[str, str, Callable[[str], object]], ...] = ()
    if cfg.source is not None:
        kind = kafka_connection if cfg.source.is_topic else postgres_connection
        source = (("source.connection", cfg.source.connection, kind),)
    for key, conn_id, resolve in (
        ("kafka.connection", cfg.kafka.connection, kafka_connection),
        ("sink.connection", cfg.sink.connection, postgres_connection),
        *source,
    ):
        try:
            resolve(conn_id)
        except ConnectionNotFound as exc:
            raise ConnectionNotFound(f"pipeline '{cfg.name}': {key}: {exc}") from None
    check_topic(cfg.name, cfg.kafka.connection, cfg.kafka.topic, "kafka.topic")
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


def _check_kafka_sink(cfg: PipelineConfig) -> None:
    """A Kafka sink (``sink.kind: kafka``): both connections resolve and both topics exist.

    :raises ReconError: naming the pipeline and the key.
    """
    assert cfg.sink.topic is not None
    for key, conn_id in (("kafka.connection", cfg.kafka.connection),
                         ("sink.connection", cfg.sink.connection)):  # fmt: skip
        try:
            kafka_connection(conn_id)
        except ConnectionNotFound as exc:
            raise ConnectionNotFound(f"pipeline '{cfg.name}': {key}: {exc}") from None
    check_topic(cfg.name, cfg.kafka.connection, cfg.kafka.topic, "kafka.topic")
    check_topic(cfg.name, cfg.sink.connection, cfg.sink.topic, "sink.topic")


def check_topic(pipeline: str, connection: str, topic: str, key: str) -> list[int]:
    """The partitions of ``topic``: it exists and ``connection`` may describe it.

    :param key: what names the topic in an error (``kafka.topic``, ``source.topic``).
    :raises ReconError: naming the pipeline and the key (or the connection).
    """
    from recon.snapshot.offsets import (
        KafkaAuthFailed,
        KafkaUnreachable,
        admin_client,
        topic_partitions,
    )

    kafka = kafka_connection(connection)
    try:
        return topic_partitions(admin_client(kafka.config), topic)
    except KafkaAuthFailed as exc:
        # Not retried: the same credentials are refused again (fix the connection).
        raise KafkaAuthFailed(kafka.failure(pipeline, exc)) from None
    except KafkaUnreachable as exc:
        raise KafkaUnreachable(kafka.failure(pipeline, exc)) from None
    except ReconError as exc:
        raise ReconError(f"pipeline '{pipeline}': {key}: {exc}") from None


def _check_source(cfg: PipelineConfig) -> None:
    """The source table and its declared columns exist, or the source topic does
    (``source``)."""
    import psycopg2

    if cfg.source is not None and cfg.source.topic is not None:
        check_topic(cfg.name, cfg.source.connection, cfg.source.topic, "source.topic")
        return

    from recon.read.source import inspect_source
    from recon.run.services import source_db

    try:
        with source_db(cfg) as pg:
            inspect_source(pg, cfg)
    except psycopg2.OperationalError as exc:
        raise ReconError(f"pipeline '{cfg.name}': source.connection: {first_line(exc)}") from None
