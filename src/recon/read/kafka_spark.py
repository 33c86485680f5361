"""Reading a window of Kafka records with Spark, and extracting each record's messageId.

:func:`extract_message_ids` is pure (raw Kafka rows in, ``recon.schemas.WINDOW`` rows out): it
runs :mod:`recon.read.message_ids`, where bad input is quarantined, on each Arrow batch.
:func:`read_kafka_ranges` is the IO: a batch read of exact offset ranges.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from recon.config import MessageIdSpec, OrderSpec, PayloadSpec
from recon.connections import KafkaConnection
from recon.read.message_ids import MAX_MESSAGE_ID_LENGTH as MAX_MESSAGE_ID_LENGTH
from recon.snapshot.window import PartitionWindow

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


RAW_COLUMNS = ("topic", "partition", "offset", "timestamp", "key", "value", "headers")


@dataclass(frozen=True)
class OffsetRange:
    """``[start, end)`` of one partition."""

    topic: str
    partition: int
    start: int
    end: int


def part_ranges(windows: Sequence[PartitionWindow], part: str) -> list[OffsetRange]:
    """The offsets each partition's ``part`` of a run holds: ``committed`` the window
    ``[from, to)`` and ``pending`` ``[to, LSO)``, both read read_committed; ``inflight``
    ``[LSO, high watermark)`` read read_uncommitted: records of open transactions and the
    committed records behind them, which a consumer reading uncommitted may have written
    already. Their sink rows are pending, never phantoms."""
    if part == "committed":
        return [OffsetRange(w.topic, w.partition, w.read_from, w.window_to) for w in windows]
    if part == "inflight":
        return [
            OffsetRange(w.topic, w.partition, max(w.pending_to, w.read_from), w.high_watermark)
            for w in windows
        ]
    return [OffsetRange(w.topic, w.partition, w.window_to, w.pending_to) for w in windows]


def extract_message_ids(
    raw: DataFrame,
    spec: MessageIdSpec,
    max_length: int = MAX_MESSAGE_ID_LENGTH,
    payload: PayloadSpec | None = None,
    order: OrderSpec | None = None,
) -> DataFrame:
    """Raw Kafka rows to one row per record with its messageId or the reason it has none:
    :func:`recon.read.message_ids.extract_ids` on each Arrow batch, the function the local engine
    runs, so both quarantine the same records for the same reasons.

    :param raw: rows of Spark's Kafka source (``topic, partition, offset, timestamp, key, value``
        and ``headers`` when the id is in a header).
    :param spec: where the id lives: a header, a JSON field of the value, or the key.
    :param max_length: ids longer than this are quarantined as oversize.
    :param payload: what of each value the pipeline compares with its sink rows.
    :param order: where each record's upsert key and position are.
    """
    from pyspark.sql import functions as F

    from recon import schemas

    if spec.kind == "header":
        # The first header of that name, as the local readers take it.
        named = F.filter(F.col("headers"), lambda h: h["key"] == F.lit(spec.name))
        id_header = F.when(F.size(named) > 0, named[0]["value"])
    else:
        id_header = F.lit(None).cast("binary")
    shaped = raw.select(
        F.col("topic").cast("string").alias("topic"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("long").alias("offset"),
        F.col("timestamp").cast("timestamp").alias("timestamp"),
        F.col("key").cast("binary").alias("key"),
        F.col("value").cast("binary").alias("value"),
        id_header.alias("id_header"),
    )
    extract = functools.partial(_extract_batches, spec, max_length, payload, order)
    return shaped.mapInArrow(extract, schemas.WINDOW)


def _extract_batches(
    spec: MessageIdSpec,
    max_length: int,
    payload: PayloadSpec | None,
    order: OrderSpec | None,
    batches: Iterator[Any],
) -> Iterator[Any]:
    """One Spark task's Arrow batches through :func:`recon.read.message_ids.extract_ids`."""
    import duckdb
    import pyarrow as pa

    from recon.read.message_ids import extract_ids

    con = duckdb.connect()
    try:
        for batch in batches:
            yield from extract_ids(
                pa.Table.from_batches([batch]), spec, max_length, con, payload, order
            ).to_batches()
    finally:
        con.close()


def read_kafka_ranges(
    spark: SparkSession,
    kafka: KafkaConnection,
    ranges: Sequence[OffsetRange],
    isolation_level: str = "read_committed",
    include_headers: bool = True,
    min_partitions: int | None = None,
) -> DataFrame | None:
    """Batch-read exact offset ranges. ``None`` when every range is empty.

    :param spark: the session.
    :param kafka: the pipeline's Kafka connection (its settings pass through as ``kafka.*``).
    :param ranges: ``[start, end)`` per partition; empty ranges are skipped.
    :param isolation_level: ``read_committed`` for the window, ``read_uncommitted`` to find
        records of aborted transactions.
    :param include_headers: needed when the messageId is in a header.
    :param min_partitions: split large partitions into more Spark tasks.
    """
    wanted = [r for r in ranges if r.end > r.start]
    if not wanted:
        return None
    assign: dict[str, list[int]] = {}
    starting: dict[str, dict[str, int]] = {}
    ending: dict[str, dict[str, int]] = {}
    for r in wanted:
        assign.setdefault(r.topic, []).append(r.partition)
        starting.setdefault(r.topic, {})[str(r.partition)] = r.start
        ending.setdefault(r.topic, {})[str(r.partition)] = r.end
    reader = (
        spark.read.format("kafka")
        .options(**kafka.spark_options())
        .option("assign", json.dumps(assign))
        .option("startingOffsets", json.dumps(starting))
        .option("endingOffsets", json.dumps(ending))
        .option("kafka.isolation.level", isolation_level)
        .option("includeHeaders", "true" if include_headers else "false")
        # Records that retention removed mid-read are reported as unverifiable by the window
        # plan; the read itself must not fail on them.
        .option("failOnDataLoss", "false")
    )
    if min_partitions:
        reader = reader.option("minPartitions", str(min_partitions))
    df = reader.load()
    return df.select(*[c for c in RAW_COLUMNS if c != "headers" or include_headers])
