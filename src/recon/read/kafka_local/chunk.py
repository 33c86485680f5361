"""The records a reader has read, as Arrow columns, handed on chunk by chunk with the messageId
extracted (:mod:`recon.read.message_ids`)."""

from __future__ import annotations

from typing import Any

from recon.engines.duckdb_connection import connect
from recon.read.kafka_local.task import ReadTask
from recon.read.message_ids import (
    expect_headers,
    extract_ids,
    key_header,
    raw_schema,
    read_columns,
)

#: Records per Arrow chunk: extraction and Parquet row groups work on this many at a time.
CHUNK_RECORDS = 262_144


class Chunk:
    """Columns of the records read so far, taken as one window table every CHUNK_RECORDS.

    Records arrive in batches of Message objects; each column is taken from a whole batch with
    one comprehension, which is what keeps Python's share of the read small.
    """

    def __init__(self, task: ReadTask) -> None:
        self.task = task
        self.header = task.spec.name if task.spec.kind == "header" else None
        self.key_header = key_header(task.order)
        self.with_key = "key" in read_columns(task.spec, task.order, task.expect)
        self.expect_headers = expect_headers(task.expect)
        # One thread keeps the rows in the order they came in (and a core for the consumer).
        self.db = connect(threads=1, preserve_insertion_order=True)
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
        if self.task.with_time:
            # (type, ms); type 0 is TIMESTAMP_NOT_AVAILABLE (a pre-0.10 record): no time, null.
            stamps = [m.timestamp() for m in batch]
            columns["timestamp"] = pa.array(
                [ms if kind else None for kind, ms in stamps], pa.timestamp("ms", tz="UTC")
            )
        if self.with_key:
            columns["key"] = pa.array([m.key() for m in batch], pa.binary())
        for column, name in (("id_header", header), ("key_header", self.key_header)):
            if name is not None:
                columns[column] = pa.array(
                    [next((v for k, v in (m.headers() or ()) if k == name), None) for m in batch],
                    pa.binary(),
                )
        if self.expect_headers:
            # Each header expect reads, its first occurrence, in expect_headers' order.
            wanted = self.expect_headers
            columns["expect_headers"] = pa.array(
                [_headers(m.headers(), wanted) for m in batch], pa.list_(pa.binary())
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

    def take(self) -> Any:
        """The records so far as ``recon.model.schemas.WINDOW`` rows (a ``pyarrow.Table``),
        messageIds extracted; None when there are none. The chunk is empty afterwards."""
        import pyarrow as pa

        if self.size == 0:
            return None
        nulls = pa.nulls(self.size, pa.binary())

        def column(name: str) -> Any:
            if name == "topic":
                return pa.repeat(pa.scalar(self.task.ranges[0].topic, pa.string()), self.size)
            if name not in self.columns[0]:
                return nulls
            return pa.chunked_array([c[name] for c in self.columns])

        # The record time is read only for a pipeline that measures latency: it costs a tuple
        # per record.
        if "timestamp" in self.columns[0]:
            stamps = pa.chunked_array([c["timestamp"] for c in self.columns])
        else:
            stamps = pa.nulls(self.size, pa.timestamp("ms", tz="UTC"))
        raw = pa.table(
            [column("topic"), column("partition"), column("offset"), stamps, column("key"),
             column("value"), column("id_header"), column("key_header")],
            schema=raw_schema(),
        )  # fmt: skip
        if self.expect_headers:
            raw = raw.append_column(
                "expect_headers", pa.chunked_array([c["expect_headers"] for c in self.columns])
            )
        task = self.task
        rows = extract_ids(
            raw, task.spec, con=self.db, payload=task.payload, order=task.order,
            expect=task.expect,
        )  # fmt: skip
        self.columns = []
        self.size = 0
        return rows

    def close(self) -> None:
        self.db.close()


def _headers(headers: Any, names: list[str]) -> list[bytes | None]:
    """The first value of each header in ``names`` (None where it is absent)."""
    found: dict[str, bytes | None] = {}
    for key, value in headers or ():
        if key in names and key not in found:
            found[key] = value
    return [found.get(name) for name in names]
