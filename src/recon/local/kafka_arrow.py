"""Kafka offset ranges to Parquet, in parallel processes, with the messageId extracted.

:func:`extract_ids` is pure (an Arrow table of raw records in, ``recon.schemas.WINDOW`` rows out)
and quarantines exactly what ``recon.kafka_read.extract_message_ids`` quarantines, with the same
reasons: a tombstone, an id that is missing, not UTF-8, a JSON object or array, empty or blank,
or longer than the limit. :func:`read_ranges` is the IO: one confluent-kafka consumer per worker
process, assigned exact ranges, stopping at each range's end (a record at or past it, or the end
of the partition), never committing offsets.

Why processes: a consumer hands records to Python one object at a time, so one interpreter reads
at most about a million records a second; partitions are spread over one worker per core.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from recon.config import MessageIdSpec
from recon.errors import ServiceUnavailable
from recon.kafka_read import MAX_MESSAGE_ID_LENGTH, OffsetRange
from recon.snapshot import KafkaAuthFailed, error_kind

if TYPE_CHECKING:
    import pyarrow as pa

#: Records per Arrow chunk: extraction and Parquet row groups work on this many at a time.
CHUNK_RECORDS = 262_144
#: librdkafka's prefetch queue. By default a partition stops fetching for a whole second
#: (``fetch.queue.backoff.ms``) once 100,000 records wait locally (``queued.min.messages``):
#: with ~100-byte records a reader then waits more than it reads (measured: 5M records in 7.8 s
#: wall for 4.1 s of CPU; 4.6 s wall with these).
FETCH_SETTINGS: dict[str, Any] = {
    "fetch.max.bytes": 104_857_600,
    "max.partition.fetch.bytes": 52_428_800,
    "queued.max.messages.kbytes": 1_048_576,
    "queued.min.messages": 500_000,
    "fetch.queue.backoff.ms": 10,
}
#: A read that receives nothing at all for this long has lost its broker.
STALL_SECONDS = 120.0


class KafkaReadFailed(ServiceUnavailable):
    """The window could not be read: the broker went away or stopped answering."""


def raw_schema() -> pa.Schema:
    """What a worker collects per record before extraction."""
    import pyarrow as pa

    return pa.schema(
        [
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("offset", pa.int64()),
            ("timestamp", pa.timestamp("ms", tz="UTC")),
            ("key", pa.binary()),
            ("value", pa.binary()),
            ("id_header", pa.binary()),  # the first header named as the id, when the id is one
        ]
    )


def window_schema() -> pa.Schema:
    """``recon.schemas.WINDOW`` as Arrow."""
    import pyarrow as pa

    return pa.schema(
        [
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("offset", pa.int64()),
            ("message_id", pa.string()),
            ("invalid_reason", pa.string()),
            ("timestamp", pa.timestamp("us", tz="UTC")),
        ]
    )


def _json_path(name: str) -> str:
    return "$." + name


def _blank(column: str) -> str:
    """Empty or only spaces (what Spark's ``trim`` removes). A CASE, so that only what starts
    with a space is trimmed: an OR or AND computes both sides for every row."""
    return (
        f"(CASE WHEN {column} = '' THEN true WHEN starts_with({column}, ' ') "
        f"THEN trim({column}) = '' ELSE false END)"
    )


def _extraction_sql(spec: MessageIdSpec, max_length: int) -> str:
    """The rules of ``recon.kafka_read.extract_message_ids`` in DuckDB SQL over ``raw``."""
    if spec.kind == "json_field":
        path = _json_path(str(spec.name)).replace("'", "''")
        source = "value"
        # Not JSON at all, no such field, or a JSON null: missing, as get_json_object says. Only
        # a value that looks like an object or array is parsed again to tell it from a string
        # such as "[a" (CASE evaluates lazily).
        found = f"TRY(json_extract_string(text, '{path}'))"
        nested = (
            "CASE WHEN starts_with(found, '{') OR starts_with(found, '[') "
            "OR starts_with(found, ' ') THEN (CASE WHEN left(ltrim(found), 1) IN ('{', '[') "
            f"THEN json_type(json_extract(text, '{path}')) IN ('OBJECT', 'ARRAY') ELSE false END) "
            "ELSE false END"
        )
        not_utf8_reason = "value_not_utf8"
    elif spec.kind in ("header", "key"):
        source = "id_header" if spec.kind == "header" else "key"
        found = "text"
        nested = "false"
        not_utf8_reason = "message_id_not_utf8"
    else:  # pragma: no cover - config validation rejects other kinds
        raise ValueError(f"unknown message_id kind {spec.kind!r}")
    return f"""
        WITH decoded AS (
            SELECT value IS NULL AS tombstone, {source} IS NOT NULL AS has_source,
                   TRY(decode({source})) AS text
            FROM raw
        ), found AS (
            SELECT tombstone, text, has_source AND text IS NULL AS not_utf8, {found} AS found
            FROM decoded
        ), judged AS (
            SELECT found, CASE
                WHEN tombstone THEN 'tombstone'
                WHEN not_utf8 THEN '{not_utf8_reason}'
                WHEN found IS NULL THEN 'message_id_missing'
                WHEN {nested} THEN 'message_id_not_scalar'
                WHEN {_blank("found")} THEN 'message_id_empty'
                WHEN (CASE WHEN strlen(found) > {int(max_length)}
                      THEN length(found) > {int(max_length)} ELSE false END)
                    THEN 'message_id_oversize'
            END AS invalid_reason
            FROM found
        )
        SELECT CASE WHEN invalid_reason IS NULL THEN found END AS message_id, invalid_reason
        FROM judged
    """


def extract_ids(
    raw: pa.Table,
    spec: MessageIdSpec,
    max_length: int = MAX_MESSAGE_ID_LENGTH,
    con: Any = None,
) -> pa.Table:
    """Raw records (:func:`raw_schema`) to one row per record with its id or why it has none.

    :param raw: the records, as a worker collects them.
    :param spec: where the id lives: a header, a JSON field of the value, or the key.
    :param max_length: ids longer than this (in characters) are quarantined as oversize.
    :param con: a DuckDB connection to reuse (a worker keeps one).
    """
    import duckdb
    import pyarrow as pa

    db = con if con is not None else duckdb.connect()
    # Only the column the id is in goes through DuckDB (which copies every string it reads);
    # positions are put back beside the ids in the same order.
    needed = (
        ["value"]
        + (["key"] if spec.kind == "key" else [])
        + (["id_header"] if spec.kind == "header" else [])
    )
    db.register("raw", raw.select(needed))
    try:
        ids = db.execute(_extraction_sql(spec, max_length)).to_arrow_table()
    finally:
        db.unregister("raw")
    schema = window_schema()
    return pa.table(
        [raw["topic"], raw["partition"], raw["offset"], ids["message_id"], ids["invalid_reason"],
         raw["timestamp"].cast(schema.field("timestamp").type)],
        schema=schema,
    )  # fmt: skip


@dataclass(frozen=True)
class ReadTask:
    """One worker's share of a read: its ranges, and the Parquet file it writes."""

    config: dict[str, Any]
    ranges: tuple[OffsetRange, ...]
    isolation_level: str
    spec: MessageIdSpec
    path: str


def _consumer(task: ReadTask) -> Any:
    from confluent_kafka import Consumer

    from recon.snapshot import _QuietLog

    return Consumer(
        {
            **task.config,
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
    )


class _Chunk:
    """Columns of the records read so far, flushed to Parquet every CHUNK_RECORDS.

    Records arrive in batches of Message objects; each column is taken from a whole batch with
    one comprehension, which is what keeps Python's share of the read small.
    """

    def __init__(self, task: ReadTask) -> None:
        import duckdb

        self.task = task
        self.header = task.spec.name if task.spec.kind == "header" else None
        self.with_key = task.spec.kind == "key"
        # One thread keeps the rows in the order they came in (and a core for the consumer).
        self.db = duckdb.connect(config={"threads": 1, "preserve_insertion_order": True})
        self.writer: Any = None
        self.written = 0
        self.columns: list[Any] = []
        self.size = 0

    def add(self, batch: list[Any], ends: dict[tuple[str, int], int]) -> list[tuple[str, int]]:
        """Append a batch of records (no error events), dropping those at or past their range's
        end; returns the partitions whose range end this batch reached."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        header = self.header
        topic = self.task.ranges[0].topic
        partitions = np.fromiter((m.partition() for m in batch), np.int32, len(batch))
        offsets = np.fromiter((m.offset() for m in batch), np.int64, len(batch))
        end_of = np.zeros(int(partitions.max()) + 1, np.int64)
        for (_, p), end in ends.items():
            if p < len(end_of):
                end_of[p] = end
        record_ends = end_of[partitions]
        reached = offsets >= record_ends - 1
        done = [(topic, int(p)) for p in np.unique(partitions[reached])] if reached.any() else []
        columns = {
            "partition": pa.array(partitions),
            "offset": pa.array(offsets),
            "value": pa.array([m.value() for m in batch], pa.binary()),
        }
        if self.with_key:
            columns["key"] = pa.array([m.key() for m in batch], pa.binary())
        if header is not None:
            columns["id_header"] = pa.array(
                [next((v for k, v in (m.headers() or ()) if k == header), None) for m in batch],
                pa.binary(),
            )
        inside = offsets < record_ends
        if not inside.all():
            mask = pa.array(inside)
            columns = {k: pc.filter(v, mask) for k, v in columns.items()}
        self.columns.append(columns)
        self.size += len(columns["offset"])
        return done

    def __len__(self) -> int:
        return self.size

    def flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self.size == 0:
            return
        nulls = pa.nulls(self.size, pa.binary())

        def column(name: str) -> Any:
            if name == "topic":
                return pa.repeat(pa.scalar(self.task.ranges[0].topic, pa.string()), self.size)
            if name not in self.columns[0]:
                return nulls
            return pa.chunked_array([c[name] for c in self.columns])

        # The record time is not read: no verdict depends on it (the settle time is applied to
        # the window's offsets at snapshot time), and it costs a tuple per record.
        stamps = pa.nulls(self.size, pa.timestamp("ms", tz="UTC"))
        raw = pa.table(
            [column("topic"), column("partition"), column("offset"), stamps, column("key"),
             column("value"), column("id_header")],
            schema=raw_schema(),
        )  # fmt: skip
        rows = extract_ids(raw, self.task.spec, con=self.db)
        if self.writer is None:
            # Ids are unique: a dictionary would only be built to be thrown away.
            self.writer = pq.ParquetWriter(
                self.task.path, window_schema(), compression="lz4",
                use_dictionary=["topic", "invalid_reason"],
            )  # fmt: skip
        self.writer.write_table(rows)
        self.written += self.size
        self.columns = []
        self.size = 0

    def close(self) -> int:
        import pyarrow.parquet as pq

        self.flush()
        if self.writer is None:  # nothing read: an empty file keeps the part readable
            pq.write_table(window_schema().empty_table(), self.task.path)
        else:
            self.writer.close()
        return self.written


def _raise_for(err: Any, where: tuple[str, int]) -> None:
    """Raise for an error event that ends the read; return for one to ride out."""
    kind = error_kind(err)
    if kind == "refused":
        raise KafkaAuthFailed(str(err))
    if kind != "transient":
        raise KafkaReadFailed(f"{where[0]}/{where[1]}: {err}")


def read_task(task: ReadTask) -> int:
    """Read a worker's ranges into its Parquet file; returns the number of records written.

    A partition is done when a record at or past its range end arrives, or the end of the
    partition (the LSO when reading committed) is reached at or past it: with read_committed the
    last offsets of a range may be transaction markers or aborted records that never arrive.

    :raises KafkaAuthFailed: the broker refused the connection's credentials.
    :raises KafkaReadFailed: the broker went away or nothing arrived for ``STALL_SECONDS``.
    """
    import gc

    from confluent_kafka import KafkaError, TopicPartition

    # Every batch allocates ten thousand message objects, and the cyclic collector would scan
    # them over and over (measured: half of the time in consume()); a reader makes no cycles.
    gc.disable()
    try:
        return _read(task, KafkaError, TopicPartition)
    finally:
        gc.enable()


def _read(task: ReadTask, KafkaError: Any, TopicPartition: Any) -> int:  # noqa: N803
    ends = {(r.topic, r.partition): r.end for r in task.ranges if r.end > r.start}
    if len({r.topic for r in task.ranges}) > 1:
        raise ValueError("a read task covers one topic")
    chunk = _Chunk(task)
    if not ends:
        return chunk.close()
    consumer = _consumer(task)
    eof = KafkaError._PARTITION_EOF
    try:
        consumer.assign(
            [TopicPartition(r.topic, r.partition, r.start) for r in task.ranges if r.end > r.start]
        )
        remaining = set(ends)
        last_progress = time.monotonic()
        while remaining:
            # consume() waits for a full batch or the timeout: short, so a partial last batch (or a
            # range that ends on a transaction marker) is not held back.
            batch = consumer.consume(num_messages=10_000, timeout=0.05)
            if not batch:
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
            if len(chunk) >= CHUNK_RECORDS:
                chunk.flush()
            done = [TopicPartition(t, p) for t, p in ends if (t, p) not in remaining]
            if done:
                consumer.pause(done)
    finally:
        consumer.close()
    return chunk.close()


def spread(ranges: Sequence[OffsetRange], workers: int) -> list[list[OffsetRange]]:
    """Ranges spread over at most ``workers`` groups, largest first onto the lightest group."""
    wanted = sorted((r for r in ranges if r.end > r.start), key=lambda r: r.start - r.end)
    groups: list[list[OffsetRange]] = [[] for _ in range(max(1, min(workers, len(wanted))))]
    loads = [0] * len(groups)
    for r in wanted:
        lightest = loads.index(min(loads))
        groups[lightest].append(r)
        loads[lightest] += r.end - r.start
    return [g for g in groups if g]


def default_workers() -> int:
    """One reader per core (``RECON_LOCAL_READERS`` overrides)."""
    configured = os.environ.get("RECON_LOCAL_READERS")
    return int(configured) if configured else max(1, os.cpu_count() or 1)


class ReaderLost(ServiceUnavailable):
    """A Kafka reader process died (killed, out of memory) before its ranges were written."""


@dataclass
class Readers:
    """Reader processes at work on one read; :meth:`wait` collects them."""

    procs: list[subprocess.Popen[bytes]]

    def wait(self) -> int:
        """The number of records written by all readers.

        :raises KafkaAuthFailed: the broker refused the connection's credentials.
        :raises KafkaReadFailed: the broker went away or stopped answering.
        :raises ReaderLost: a reader died without saying why.
        """
        total = 0
        try:
            for proc in self.procs:
                out, err = proc.communicate()
                if proc.returncode == 0:
                    total += int(json.loads(out)["records"])
                    continue
                raise _error_of(proc.returncode, err)
        finally:
            self.stop()
        return total

    def stop(self) -> None:
        """Kill what is still reading (after another reader failed, or on interruption)."""
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


_ERRORS: dict[str, type[Exception]] = {
    "KafkaAuthFailed": KafkaAuthFailed,
    "KafkaReadFailed": KafkaReadFailed,
}


def _error_of(returncode: int, stderr: bytes) -> Exception:
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    if lines:
        try:
            said = json.loads(lines[-1])
            return _ERRORS.get(said["error"], KafkaReadFailed)(said["message"])
        except (ValueError, KeyError, TypeError):
            pass
    how = f"signal {-returncode}" if returncode < 0 else f"exit status {returncode}"
    return ReaderLost(
        f"a Kafka reader process died ({how}) before its part of the window was written; "
        "nothing was kept: run it again with the same run id"
    )


def read_ranges(
    config: dict[str, Any],
    ranges: Sequence[OffsetRange],
    spec: MessageIdSpec,
    directory: str,
    *,
    isolation_level: str = "read_committed",
    workers: int | None = None,
) -> Readers:
    """Start reading ``ranges`` into ``directory`` (one Parquet file per reader process).

    Readers are fresh interpreters (``python -m recon.local.kafka_arrow``), whatever process
    starts them (the CLI, an Airflow task, a test): librdkafka's threads do not survive a fork.
    The task, credentials included, goes to a reader on its standard input, never its command
    line.

    :param config: the connection's librdkafka settings.
    :param ranges: ``[start, end)`` per partition; empty ranges are skipped.
    :param spec: where the id lives.
    :param directory: created if missing; holds ``part-<n>.parquet``.
    :param isolation_level: ``read_committed``, or ``read_uncommitted`` to find aborted records.
    :param workers: processes to use (default :func:`default_workers`).
    """
    os.makedirs(directory, exist_ok=True)
    groups = spread(ranges, workers or default_workers()) or [[]]
    procs = []
    for i, group in enumerate(groups):
        task = {
            "config": dict(config),
            "ranges": [[r.topic, r.partition, r.start, r.end] for r in group],
            "isolation_level": isolation_level,
            "spec": [spec.kind, spec.name],
            "path": f"{directory}/part-{i}.parquet",
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "recon.local.kafka_arrow"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(task).encode())
        proc.stdin.close()
        proc.stdin = None  # written and closed: communicate() has nothing more to send
        procs.append(proc)
    return Readers(procs)


def _reader_main() -> int:
    """A reader process: one task from standard input, the record count to standard output, a
    failure as one JSON line on standard error (exit status 2)."""
    task = json.loads(sys.stdin.read())
    read = ReadTask(
        config=task["config"],
        ranges=tuple(OffsetRange(t, int(p), int(s), int(e)) for t, p, s, e in task["ranges"]),
        isolation_level=task["isolation_level"],
        spec=MessageIdSpec(task["spec"][0], task["spec"][1]),
        path=task["path"],
    )
    try:
        records = read_task(read)
    except (KafkaAuthFailed, KafkaReadFailed) as exc:
        sys.stderr.write(json.dumps({"error": type(exc).__name__, "message": str(exc)}) + "\n")
        return 2
    sys.stdout.write(json.dumps({"records": records}))
    return 0


if __name__ == "__main__":
    sys.exit(_reader_main())
