"""An upstream Kafka topic as a pipeline's source (``source: {topic: ...}``): a mirror or a
stream-processing stage copies its records to the pipeline's topic, and a message the stage
never published there is ``unpublished``, as an outbox row is.

The run's source rows are the upstream topic's committed records whose Kafka timestamp lies in
the run's source times (``recon.read.source.SourceTimes``: after ``read_from``, at most
``snapshot_at``), read with the same readers as the window (each engine's own): from the first
offset at or after ``read_from`` (Kafka's time index) to the partition's last stable offset, the
later ones dropped by their timestamp. A record is judged by the run in whose settle interval its
timestamp lies, and is named ``topic/partition@offset`` in findings. Records whose timestamp is
older than their predecessors' (``CreateTime`` set by a producer with a skewed clock) near the
horizon's start may be missed: keep ``horizon_hours`` well inside the topic's retention and
longer than the settle time.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from recon.config import PipelineConfig, SourceSpec
from recon.errors import ReconError
from recon.read.ranges import OffsetRange
from recon.read.source import SourceTimes


def topic_spec(cfg: PipelineConfig) -> SourceSpec:
    """The pipeline's topic source.

    :raises ReconError: the pipeline declares no topic as its source.
    """
    if cfg.source is None or not cfg.source.is_topic:
        raise ReconError(f"pipeline '{cfg.name}': declares no upstream topic as its source")
    return cfg.source


def source_topic_ranges(cfg: PipelineConfig, times: SourceTimes) -> list[OffsetRange]:
    """The offsets of the upstream topic a run reads for ``times``: per partition, from the
    first record timed at or after ``times.read_from`` to the last stable offset."""
    from confluent_kafka import IsolationLevel
    from confluent_kafka.admin import OffsetSpec as _OffsetSpec  # type: ignore[attr-defined]

    from recon.config.connections import kafka_connection
    from recon.snapshot.offsets import admin_client, list_offsets
    from recon.stack.preflight import check_topic

    offset_spec: Any = _OffsetSpec  # untyped in confluent-kafka's stubs
    spec = topic_spec(cfg)
    assert spec.topic is not None
    partitions = check_topic(cfg.name, spec.connection, spec.topic, "source.topic")
    admin = admin_client(kafka_connection(spec.connection).config)
    since = _epoch_ms(times.read_from)
    first = list_offsets(admin, spec.topic, partitions, offset_spec.for_timestamp(since))
    stable = list_offsets(
        admin, spec.topic, partitions, offset_spec.latest(),
        isolation_level=IsolationLevel.READ_COMMITTED,
    )  # fmt: skip
    # -1: no record is timed at or after read_from: nothing to read in that partition; nor when
    # the first such record is past the last stable offset (in an open transaction).
    return [
        OffsetRange(
            spec.topic, p, stable[p] if first[p] < 0 else min(first[p], stable[p]), stable[p]
        )
        for p in partitions
    ]


def source_rows_sql(records: str, times: SourceTimes) -> str:
    """The statement (DuckDB dialect, ``recon.rules.render.for_dialect`` for Spark) that makes
    the rules' input ``source_rows`` (``message_id, source_key, judge``) from the upstream
    records read for ``times`` (relation ``records``, the window's schema with timestamps)."""
    settled = f'"timestamp" <= {_at(times.settled_to)}'
    if times.settled_from is not None:
        settled = f'"timestamp" > {_at(times.settled_from)} AND {settled}'
    key = "topic || '/' || CAST(\"partition\" AS VARCHAR) || '@' || CAST(\"offset\" AS VARCHAR)"
    return (
        f"SELECT message_id, {key} AS source_key, ({settled}) AS judge FROM {records} "
        f'WHERE "timestamp" > {_at(times.read_from)} AND "timestamp" <= {_at(times.snapshot_at)}'
    )


def _at(moment: datetime) -> str:
    # A time without a zone is UTC, as the results database stores them.
    instant = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return f"CAST('{instant.astimezone(UTC).isoformat()}' AS TIMESTAMPTZ)"


def _epoch_ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)
