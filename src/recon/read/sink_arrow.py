"""The run's sink rows out of PostgreSQL with ``COPY``, into Parquet.

The query is ``recon.read.sink.sink_query`` (identifiers quoted with ``sql.Identifier``), the
same rows the Spark engine reads through JDBC. ``COPY ... TO STDOUT`` in CSV streams to a file
first (the client never holds the table in memory), which Arrow's parallel CSV reader parses:
an unquoted empty field is NULL, a quoted one an empty string, so a blank messageId stays
blank and is judged ``invalid`` rather than lost.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from recon.config import OrderSpec, PayloadSpec, SinkSpec
from recon.read.sink import SinkTable, sink_query
from recon.snapshot.sink_position import SinkRange


def sink_schema() -> Any:
    """``recon.schemas.SINK_ROWS`` as Arrow, without ``ingest_seq`` (no verdict reads it)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("sink_key", pa.string()),
            ("message_id", pa.string()),
            ("sink_time", pa.timestamp("us", tz="UTC")),
            ("payload", pa.list_(pa.string())),
            ("order_key", pa.string()),
            ("order_position", pa.int64()),
        ]
    )


def _csv_schema(compared: int) -> Any:
    """The CSV's columns: the time as PostgreSQL prints it in ISO style in UTC (the COPY's
    transaction sets both: no session default can change it), which Arrow parses; each compared
    payload column as a column of its own (CSV has no lists)."""
    import pyarrow as pa

    return pa.schema(
        [("sink_key", pa.string()), ("message_id", pa.string()),
         ("sink_time", pa.timestamp("us", tz="UTC")), ("order_key", pa.string()),
         ("order_position", pa.int64())]
        + [(f"payload_{i}", pa.string()) for i in range(1, compared + 1)]
    )  # fmt: skip


def copy_sink_rows(
    pg: Any,
    spec: SinkSpec,
    table: SinkTable,
    rows: SinkRange | None,
    path: str,
    payload: PayloadSpec | None = None,
    order: OrderSpec | None = None,
) -> int:
    """Write the run's sink rows to the Parquet file ``path``; returns how many.

    The rows stream from ``COPY`` through a pipe into Arrow's CSV reader and on to Parquet in
    batches: neither the CSV text nor the table is ever whole in memory or on disk.

    :param pg: an open psycopg2 connection to the sink database.
    :param spec: the sink declaration.
    :param table: the inspected table (``recon.read.sink.inspect_sink``).
    :param rows: the run's range of the ingest sequence (None: the whole table).
    :param payload: the pipeline's ``payload`` (``table`` inspected with it).
    :param order: the pipeline's ``order`` (``table`` inspected with it).
    """
    import pyarrow.parquet as pq
    from pyarrow import csv

    compared = len(table.payload_kinds)
    csv_schema = _csv_schema(compared)
    items = "".join(f", payload_{i}" for i in range(1, compared + 1))
    # Each compared column on its own (no array built per row), the time as text: PostgreSQL's
    # numeric epoch arithmetic cost more than the rest of the COPY together (10M rows: 9.4 s
    # -> 5.6 s for the COPY alone).
    query = (
        f"SELECT sink_key, message_id, sink_time, order_key, order_position{items} "
        f"FROM ({sink_query(pg, spec, table, rows, payload, order, flat=True)}) q"
    )
    read_end, write_end = os.pipe()
    failure: list[BaseException] = []

    def produce() -> None:
        try:
            with os.fdopen(write_end, "wb", buffering=1 << 20) as out, pg.cursor() as cur:
                cur.execute("SET LOCAL TimeZone = 'UTC'; SET LOCAL DateStyle = 'ISO, YMD'")
                cur.copy_expert(f"COPY ({query}) TO STDOUT WITH (FORMAT csv)", out)
        except BaseException as exc:  # re-raised below, after the reader has drained the pipe
            failure.append(exc)

    producer = threading.Thread(target=produce, name="recon-sink-copy")
    producer.start()
    written = 0
    writer = pq.ParquetWriter(path, sink_schema(), compression="lz4")
    try:
        with os.fdopen(read_end, "rb") as source:
            # No row in the run's range (an idle pipeline) is no CSV at all, which Arrow
            # refuses: the Parquet file is left with no row group.
            empty = not source.peek(1)
            reader = (
                []
                if empty
                else csv.open_csv(
                    source,
                    read_options=csv.ReadOptions(column_names=csv_schema.names, block_size=8 << 20),
                    convert_options=csv.ConvertOptions(
                        column_types=csv_schema,
                        strings_can_be_null=True,
                        quoted_strings_can_be_null=False,
                    ),
                )
            )
            for batch in reader:
                writer.write_batch(_shaped(batch, compared))
                written += batch.num_rows
    except Exception:
        if not failure:
            raise
    finally:
        writer.close()
        producer.join()
        pg.rollback()  # the COPY's read-only transaction
    if failure:
        raise failure[0]
    return written


def _shaped(batch: Any, compared: int) -> Any:
    """A CSV batch (:func:`_csv_schema`) in :func:`sink_schema`: the payload columns as one list
    per row (null when none is compared)."""
    import numpy as np
    import pyarrow as pa

    stamps = batch.column(2)
    n = batch.num_rows
    if compared:
        # Row-major: row r's items are values[r * compared : (r + 1) * compared].
        flat = pa.concat_arrays([batch.column(5 + i) for i in range(compared)])
        order = (np.arange(n)[:, None] + np.arange(compared)[None, :] * n).ravel()
        offsets = pa.array(np.arange(0, n * compared + 1, compared, dtype=np.int32))
        payload = pa.ListArray.from_arrays(offsets, flat.take(pa.array(order)))
    else:
        payload = pa.nulls(n, pa.list_(pa.string()))
    columns = [batch.column(0), batch.column(1), stamps, payload, batch.column(3), batch.column(4)]
    return pa.record_batch(columns, schema=sink_schema())
