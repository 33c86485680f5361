"""A Kafka sink's rows (``sink.kind: kafka``): the target topic's records of a run's ranges
(:mod:`recon.snapshot.target_position`), read with the local engine's Kafka reader
(:func:`recon.read.kafka_local.reader.read_tables`) and shaped as a table sink's rows
(:func:`recon.read.sink_arrow.sink_schema`), so the rules judge them as any sink's.

Each record is one row: ``sink_key`` its target coordinates (``topic:partition:offset``, what a
duplicated message's copies are listed by), ``message_id`` found as the sink declares it
(``sink.message_id``), ``sink_time`` the record's Kafka timestamp (``late`` is the target's
timestamp minus the source's). A record without a usable id keeps a null ``message_id``: the
rules quarantine it as any sink row without one.

The committed ranges are read ``read_committed`` (an aborted record is no delivery); the ranges
past the last stable offset ``read_uncommitted`` (:func:`open_message_ids`: messages on their
way in transactions still open, pending).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from recon.config import MessageIdSpec
from recon.read.kafka_local.reader import read_tables
from recon.read.kafka_local.task import ReadTask
from recon.read.sink_arrow import sink_schema
from recon.snapshot.target_position import TargetRange


def _task(
    config: dict[str, Any], ranges: Sequence[Any], isolation: str, spec: MessageIdSpec
) -> ReadTask:
    return ReadTask(
        config=config,
        ranges=tuple(r for r in ranges if r.end > r.start),
        isolation_level=isolation,
        spec=spec,
        with_time=True,
    )


def sink_rows(
    config: dict[str, Any], ranges: Sequence[TargetRange], spec: MessageIdSpec
) -> Iterator[Any]:
    """The target's committed records of ``ranges`` as sink rows (``pyarrow.Table`` chunks of
    :func:`sink_schema`).

    :param config: the sink connection's client settings.
    :param spec: where the target's records carry their messageId (``sink.message_id``).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    schema = sink_schema()
    task = _task(config, [r.committed() for r in ranges], "read_committed", spec)
    if not task.ranges:
        return
    for window in read_tables(task):
        keys = pc.binary_join_element_wise(
            window["topic"],
            pc.cast(window["partition"], pa.string()),
            pc.cast(window["offset"], pa.string()),
            ":",
        )
        ids = pc.if_else(pc.is_null(window["invalid_reason"]), window["message_id"], None)
        n = window.num_rows
        yield pa.table(
            [
                keys,
                pc.cast(ids, pa.string()),
                pc.cast(window["timestamp"], schema.field("sink_time").type),
                pa.nulls(n, pa.string()),
                pa.nulls(n, pa.int64()),
            ],
            schema=schema,
        )


def write_sink_rows(
    path: str, config: dict[str, Any], ranges: Sequence[TargetRange], spec: MessageIdSpec
) -> int:
    """:func:`sink_rows` into one Parquet file at ``path`` (an empty read: a file without
    rows); returns the rows written."""
    import pyarrow.parquet as pq

    written = 0
    with pq.ParquetWriter(path, sink_schema(), compression="lz4") as writer:
        for table in sink_rows(config, ranges, spec):
            writer.write_table(table)
            written += table.num_rows
    return written


def open_message_ids(
    config: dict[str, Any], ranges: Sequence[TargetRange], spec: MessageIdSpec
) -> set[str]:
    """The messageIds of target records past the last stable offset (transactions still open,
    read ``read_uncommitted``): their messages are pending, neither delivered nor lost."""
    task = _task(config, [r.open() for r in ranges], "read_uncommitted", spec)
    found: set[str] = set()
    if not task.ranges:
        return found
    for window in read_tables(task):
        for mid, reason in zip(
            window["message_id"].to_pylist(), window["invalid_reason"].to_pylist(), strict=True
        ):
            if mid is not None and reason is None:
                found.add(mid)
    return found
