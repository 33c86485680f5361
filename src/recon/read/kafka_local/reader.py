"""One reader: a worker's offset ranges read with confluent-kafka, the messageIds extracted.

:func:`read_tables` is the IO: one confluent-kafka consumer, assigned exact ranges, stopping at
each range's end (a record at or past it, or the end of the partition), never committing
offsets, handing on the records chunk by chunk. :func:`read_task` writes them to the task's
Parquet file; :func:`main` is a local engine's reader process (``python -m
recon.read.kafka_local``): the task on standard input, the record count on standard output, a
failure as one JSON line on standard error. A Spark task runs :func:`read_tables` in its Python
worker (``recon.read.kafka_spark``).
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

from recon.config import MessageIdSpec
from recon.errors import ServiceUnavailable
from recon.read.kafka_local.chunk import CHUNK_RECORDS, Chunk
from recon.read.kafka_local.task import (
    ReadTask,
    expect_from_json,
    order_from_json,
    payload_from_json,
)
from recon.read.ranges import OffsetRange
from recon.snapshot.offsets import (
    KafkaAuthFailed,
    Refusals,
    error_kind,
    refused,
    without_callbacks,
)

#: librdkafka's prefetch queue. By default a partition stops fetching for a whole second
#: (``fetch.queue.backoff.ms``) once 100,000 records wait locally (``queued.min.messages``):
#: with ~100-byte records a reader then waits more than it reads (measured: 5M records in 7.8 s
#: wall for 4.1 s of CPU; 4.6 s wall with a 10 ms backoff). Fetches stay small: a fetch
#: response's memory is held until its last record is released, so 50 MiB fetches per partition
#: kept about 1 GiB resident per reader (10M records, two readers: peak 2.0 GiB with them,
#: 0.8 GiB with these, at the same speed).
FETCH_SETTINGS: dict[str, Any] = {
    "fetch.max.bytes": 4_194_304,
    "max.partition.fetch.bytes": 2_097_152,
    "queued.max.messages.kbytes": 65_536,
    "queued.min.messages": 100_000,
    "fetch.queue.backoff.ms": 10,
}
#: A read that receives nothing at all for this long has lost its broker.
STALL_SECONDS = 120.0


class KafkaReadFailed(ServiceUnavailable):
    """The window could not be read: the broker went away or stopped answering."""


def _consumer(task: ReadTask, refusals: Refusals) -> Any:
    from confluent_kafka import Consumer

    from recon.snapshot.offsets import _QuietLog

    return Consumer(
        {
            **without_callbacks(task.config),
            "group.id": f"recon-local-reader-{uuid.uuid4().hex[:12]}",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "isolation.level": task.isolation_level,
            # A range start that retention removed meanwhile: read what is left (the window plan
            # reported the removed offsets as unverifiable), as Spark's failOnDataLoss=false.
            "auto.offset.reset": "earliest",
            **FETCH_SETTINGS,
        },
        logger=_QuietLog(),
        error_cb=refusals,
    )


def _raise_for(err: Any, where: tuple[str, int]) -> None:
    """Raise for an error event that ends the read; return for one to ride out."""
    kind = error_kind(err)
    if kind == "refused":
        raise refused(err)
    if kind != "transient":
        raise KafkaReadFailed(f"{where[0]}/{where[1]}: {err}")


def read_tables(
    task: ReadTask, chunk_records: int = CHUNK_RECORDS, stop: threading.Event | None = None
) -> Iterator[Any]:
    """The task's records as ``recon.model.schemas.WINDOW`` tables (``pyarrow.Table``), up to
    ``chunk_records`` rows each, in the order they were read; ``stop`` set ends the read early
    (what was read by then is handed on: the caller that stops a read discards it).

    A partition is done when a record at or past its range end arrives, or the end of the
    partition (the LSO when reading committed) is reached at or past it: with read_committed the
    last offsets of a range may be transaction markers or aborted records that never arrive.
    Python's cyclic garbage collector is off while it reads: every batch allocates ten thousand
    message objects, which the collector would scan over and over (measured: half of the time in
    consume()); a reader makes no cycles.

    :raises KafkaAuthFailed: the broker refused the connection's credentials.
    :raises KafkaReadFailed: the broker went away or nothing arrived for ``STALL_SECONDS``.
    """
    import gc

    from confluent_kafka import KafkaError, TopicPartition

    was_enabled = gc.isenabled()
    gc.disable()
    chunk = Chunk(task)
    try:
        yield from _read(task, chunk, chunk_records, KafkaError, TopicPartition, stop)
        last = chunk.take()
        if last is not None:
            yield last
    finally:
        chunk.close()
        if was_enabled:
            gc.enable()


def read_task(task: ReadTask, stop: threading.Event | None = None) -> int:
    """Read a worker's ranges into its Parquet file (``task.path``); returns the number of
    records written. An empty read writes an empty file: the part stays readable. ``stop`` set
    ends the read early (a read in the caller's process: ``recon.read.kafka_local.pool``).

    :raises KafkaAuthFailed: the broker refused the connection's credentials.
    :raises KafkaReadFailed: the broker went away or nothing arrived for ``STALL_SECONDS``.
    """
    import pyarrow.parquet as pq

    from recon.read.message_ids import window_schema

    if task.path is None:
        raise ValueError("a reader process's task names its Parquet file")
    # Ids are unique: a dictionary would only be built to be thrown away.
    with pq.ParquetWriter(
        task.path, window_schema(), compression="lz4", use_dictionary=["topic", "invalid_reason"]
    ) as writer:
        written = 0
        for table in read_tables(task, stop=stop):
            writer.write_table(table)
            written += table.num_rows
    return written


def _read(
    task: ReadTask,
    chunk: Chunk,
    chunk_records: int,
    KafkaError: Any,  # noqa: N803
    TopicPartition: Any,  # noqa: N803
    stop: threading.Event | None,
) -> Iterator[Any]:
    ends = {(r.topic, r.partition): r.end for r in task.ranges if r.end > r.start}
    if len({r.topic for r in task.ranges}) > 1:
        raise ValueError("a read task covers one topic")
    if not ends:
        return
    refusals = Refusals()
    consumer = _consumer(task, refusals)
    eof = KafkaError._PARTITION_EOF
    try:
        consumer.assign(
            [TopicPartition(r.topic, r.partition, r.start) for r in task.ranges if r.end > r.start]
        )
        remaining = set(ends)
        last_progress = time.monotonic()
        while remaining and not (stop is not None and stop.is_set()):
            # consume() waits for a full batch or the timeout: short, so a partial last batch (or a
            # range that ends on a transaction marker) is not held back.
            batch = consumer.consume(num_messages=10_000, timeout=0.05)
            if not batch:
                if refusals.error is not None:
                    raise refused(refusals.error)
                if time.monotonic() - last_progress > STALL_SECONDS:
                    raise KafkaReadFailed(
                        f"no record from the broker for {STALL_SECONDS:.0f} s while reading "
                        f"{', '.join(f'{t}/{p}' for t, p in sorted(remaining))}"
                    )
                continue
            last_progress = time.monotonic()
            good = batch
            if any(m.error() is not None for m in batch):
                good = []
                for msg in batch:
                    err = msg.error()
                    if err is None:
                        good.append(msg)
                        continue
                    where = (msg.topic(), msg.partition())
                    if err.code() == eof:
                        # The partition's end (the LSO when read_committed): past the range?
                        if where in remaining and (msg.offset() or 0) >= ends[where]:
                            remaining.discard(where)
                        continue
                    _raise_for(err, where)
            if good:
                for where in chunk.add(good, ends):
                    remaining.discard(where)
            if len(chunk) >= chunk_records:
                yield chunk.take()
            done = [TopicPartition(t, p) for t, p in ends if (t, p) not in remaining]
            if done:
                consumer.pause(done)
    finally:
        consumer.close()


def main() -> int:
    """A reader process: one task from standard input, the record count to standard output, a
    failure as one JSON line on standard error (exit status 2)."""
    task = json.loads(sys.stdin.read())
    read = ReadTask(
        config=task["config"],
        ranges=tuple(OffsetRange(t, int(p), int(s), int(e)) for t, p, s, e in task["ranges"]),
        isolation_level=task["isolation_level"],
        spec=MessageIdSpec(task["spec"][0], task["spec"][1]),
        path=task["path"],
        with_time=bool(task.get("with_time", False)),
        payload=payload_from_json(task.get("payload")),
        order=order_from_json(task.get("order")),
        expect=expect_from_json(task.get("expect")),
    )
    try:
        records = read_task(read)
    except (KafkaAuthFailed, KafkaReadFailed) as exc:
        sys.stderr.write(json.dumps({"error": type(exc).__name__, "message": str(exc)}) + "\n")
        return 2
    sys.stdout.write(json.dumps({"records": records}))
    return 0
