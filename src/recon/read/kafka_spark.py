"""Reading a window of Kafka records with Spark: :func:`read_window`, exact offset ranges read
by Spark tasks with the local engine's reader (``recon.read.kafka_local.reader``), so both
engines read, stop and quarantine records (:mod:`recon.read.message_ids`) the same way.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from recon.config import MessageIdSpec, OrderSpec, PayloadSpec
from recon.config.connections import KafkaConnection
from recon.config.diversions import FieldRef
from recon.read.ranges import OffsetRange, split_ranges

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


#: Records a Spark task extracts and hands to Spark at a time: fewer than a reader process
#: gathers for its Parquet row groups, since Spark holds each batch again on its side.
TASK_CHUNK_RECORDS = 65_536


def read_window(
    spark: SparkSession,
    kafka: KafkaConnection,
    ranges: Sequence[OffsetRange],
    spec: MessageIdSpec,
    *,
    isolation_level: str = "read_committed",
    with_time: bool = False,
    payload: PayloadSpec | None = None,
    order: OrderSpec | None = None,
    expect: tuple[FieldRef, ...] = (),
) -> DataFrame:
    """The records of exact offset ranges as ``recon.model.schemas.WINDOW`` rows, messageIds
    extracted.

    One Spark task per range (:func:`split_ranges`: at least one per core), each reading its
    range with confluent-kafka in its Python worker, as a local engine's reader does
    (``recon.read.kafka_local.reader.read_tables``): the same consumer settings, stop rules and
    extraction, and the records go from the consumer into Arrow once. Spark's Kafka source read
    the 1M-message window in 12 s here and handed every record to a Python worker afterwards for
    the extraction; this reads it in about 6 s in a fresh JVM (``bench/engine_changes.md``).
    Lazy: a failed read raises when the frame is computed (:func:`reraise_read_failure`).

    :param kafka: the pipeline's Kafka connection (its librdkafka settings go to the tasks).
    :param ranges: ``[start, end)`` per partition; empty ranges are skipped.
    :param spec: where the id lives: a header, a JSON field of the value, or the key.
    :param isolation_level: ``read_committed``, or ``read_uncommitted`` to find aborted records.
    :param with_time: read each record's Kafka timestamp (else it is left null).
    :param payload: what of each value the pipeline compares with its sink rows.
    :param order: where each record's upsert key and position are.
    :param expect: the fields the pipeline's ``expect`` reads.
    """
    from recon.model import schemas

    pieces = split_ranges(ranges, _cores(spark))
    if not pieces:
        return spark.createDataFrame([], schemas.WINDOW)
    # One task per range: a range of n numbers in n slices puts one number in each, and the
    # number is the range's place in the list the tasks receive with their function.
    tasks = spark.range(0, len(pieces), 1, len(pieces))
    read = functools.partial(
        _read_batches, tuple(pieces), dict(kafka.config), isolation_level, spec, with_time,
        payload, order, expect,
    )  # fmt: skip
    return tasks.mapInArrow(read, schemas.WINDOW)


def _cores(spark: SparkSession) -> int:
    """The cores the session's tasks run on (a Spark Connect session, which has no
    SparkContext to ask, counts this machine's)."""
    from pyspark.errors import PySparkAttributeError

    try:
        return int(spark.sparkContext.defaultParallelism)
    except PySparkAttributeError:
        return os.cpu_count() or 1


def _read_batches(
    pieces: tuple[OffsetRange, ...],
    config: dict[str, Any],
    isolation_level: str,
    spec: MessageIdSpec,
    with_time: bool,
    payload: PayloadSpec | None,
    order: OrderSpec | None,
    expect: tuple[FieldRef, ...],
    batches: Iterator[Any],
) -> Iterator[Any]:
    """One Spark task: the ranges whose places it is given, read by
    ``recon.read.kafka_local.reader.read_tables``."""
    from recon.read.kafka_local.reader import read_tables
    from recon.read.kafka_local.task import ReadTask

    for batch in batches:
        for place in batch.column(0).to_pylist():
            task = ReadTask(
                config, (pieces[place],), isolation_level, spec,
                with_time=with_time, payload=payload, order=order, expect=expect,
            )  # fmt: skip
            for table in read_tables(task, TASK_CHUNK_RECORDS):
                yield from table.to_batches()


def reraise_read_failure(exc: Exception) -> None:
    """Raise the reader's own error for a Spark action that failed because a task's read did
    (the broker refused the credentials, went away, stopped answering); return otherwise.

    :raises KafkaAuthFailed: a task's broker refused the connection's credentials.
    :raises KafkaReadFailed: a task's broker went away or stopped answering.
    """
    from recon.read.kafka_local.reader import KafkaReadFailed
    from recon.snapshot.offsets import KafkaAuthFailed

    # A task's error reaches the driver as the text of its Python traceback.
    for line in str(exc).splitlines():
        for cls in (KafkaAuthFailed, KafkaReadFailed):
            found = line.find(f"{cls.__name__}: ")
            if found >= 0:
                raise cls(line[found + len(cls.__name__) + 2 :].strip()) from exc
