"""Reading a window of Kafka records with Spark, and extracting each record's messageId.

:func:`extract_message_ids` is pure (raw Kafka rows in, ``recon.schemas.WINDOW`` rows out) and is
where bad input is quarantined: a record whose id is missing, empty, not UTF-8, oversize, or
whose value is a tombstone keeps its position and gets an ``invalid_reason`` instead of being
dropped. :func:`read_kafka_ranges` is the IO: a batch read of exact offset ranges.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from recon.config import MessageIdSpec
from recon.connections import KafkaConnection
from recon.window import PartitionWindow

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

#: Longer ids are quarantined: an id is a key, not a payload.
MAX_MESSAGE_ID_LENGTH = 512

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


def _utf8_or_null(binary: Column) -> Column:
    """The bytes as text, or null when they are not valid UTF-8 (never a replacement char)."""
    from pyspark.sql import functions as F

    text = binary.cast("string")
    return F.when(F.call_function("is_valid_utf8", text), text)


def extract_message_ids(
    raw: DataFrame, spec: MessageIdSpec, max_length: int = MAX_MESSAGE_ID_LENGTH
) -> DataFrame:
    """Raw Kafka rows to one row per record with its messageId or the reason it has none.

    :param raw: rows of Spark's Kafka source (``topic, partition, offset, timestamp, key, value``
        and ``headers`` when the id is in a header).
    :param spec: where the id lives: a header, a JSON field of the value, or the key.
    :param max_length: ids longer than this are quarantined as oversize.
    """
    from pyspark.sql import functions as F

    nested = F.lit(False)
    if spec.kind == "header":
        header = F.filter(F.col("headers"), lambda h: h["key"] == F.lit(spec.name))
        id_bytes = F.when(F.size(header) > 0, header[0]["value"])
        found = _utf8_or_null(id_bytes)
        not_utf8 = id_bytes.isNotNull() & found.isNull()
    elif spec.kind == "key":
        id_bytes = F.col("key")
        found = _utf8_or_null(id_bytes)
        not_utf8 = id_bytes.isNotNull() & found.isNull()
    elif spec.kind == "json_field":
        value_text = _utf8_or_null(F.col("value"))
        field = F.get_json_object(value_text, "$." + str(spec.name))
        found = field
        not_utf8 = F.col("value").isNotNull() & value_text.isNull()
        # get_json_object gives an object or array as its JSON text; only a value that looks like
        # one is parsed again (CASE WHEN evaluates lazily) to tell it from a string like "[a".
        looks_nested = F.substring(F.ltrim(field), 1, 1).isin("{", "[")
        json_type = F.schema_of_variant(
            F.try_variant_get(F.try_parse_json(value_text), "$." + str(spec.name), "variant")
        )
        nested = F.when(looks_nested, json_type.rlike("^(OBJECT|ARRAY)")).otherwise(F.lit(False))
    else:  # pragma: no cover - config validation rejects other kinds
        raise ValueError(f"unknown message_id kind {spec.kind!r}")

    reason = (
        F.when(F.col("value").isNull(), F.lit("tombstone"))
        .when(
            not_utf8,
            F.lit("message_id_not_utf8" if spec.kind != "json_field" else "value_not_utf8"),
        )
        .when(found.isNull(), F.lit("message_id_missing"))
        .when(nested, F.lit("message_id_not_scalar"))
        .when(F.trim(found) == "", F.lit("message_id_empty"))
        .when(F.length(found) > max_length, F.lit("message_id_oversize"))
    )
    return raw.select(
        F.col("topic").cast("string").alias("topic"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("long").alias("offset"),
        F.when(reason.isNull(), found).alias("message_id"),
        reason.alias("invalid_reason"),
        F.col("timestamp").cast("timestamp").alias("timestamp"),
    )


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
