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


def sink_schema(compared: int = 0) -> Any:
    """The Parquet file's columns (and the CSV's, in the same order, but for the time, which
    the CSV holds as microseconds since the epoch: :func:`copy_sink_rows`); each compared
    payload column as a column of its own (``payload_1`` ... in declared order), put into one
    list per row only when the rules read them (:func:`sink_rows_sql`). No ``ingest_seq``: no
    verdict reads it.

    :param compared: how many payload columns the pipeline compares.
    """
    import pyarrow as pa

    return pa.schema(
        [("sink_key", pa.string()), ("message_id", pa.string()),
         ("sink_time", pa.timestamp("us", tz="UTC")), ("order_key", pa.string()),
         ("order_position", pa.int64())]
        + [(f"payload_{i}", pa.string()) for i in range(1, compared + 1)]
    )  # fmt: skip


def sink_rows_sql(source: str, columns: list[str]) -> str:
    """The rules' ``sink_rows`` (DuckDB) over a file of :func:`sink_schema`: the payload columns
    as one list per row in declared order (a null list when none is compared).

    :param source: the relation over the file.
    :param columns: its columns, in order.
    """
    compared = [c for c in columns if c.startswith("payload_")]
    payload = f"[{', '.join(compared)}]" if compared else "CAST(NULL AS VARCHAR[])"
    return (
        f"SELECT sink_key, message_id, sink_time, {payload} AS payload, order_key, "
        f"order_position FROM {source}"
    )


def copy_sink_rows(
    pg: Any,
    spec: SinkSpec,
    table: SinkTable,
    rows: SinkRange | None,
    path: str,
    payload: PayloadSpec | None = None,
    order: OrderSpec | None = None,
) -> int:
    """Write the run's sink rows to the Parquet file ``path`` (:func:`copy_to_parquet`);
    returns how many.

    :param pg: an open psycopg2 connection to the sink database.
    :param spec: the sink declaration.
    :param table: the inspected table (``recon.read.sink.inspect_sink``).
    :param rows: the run's range of the ingest sequence (None: the whole table).
    :param payload: the pipeline's ``payload`` (``table`` inspected with it).
    :param order: the pipeline's ``order`` (``table`` inspected with it).
    """
    import pyarrow as pa

    compared = len(table.payload_kinds)
    schema = sink_schema(compared)
    # Each compared column on its own (no array built per row); the time as microseconds since
    # the epoch, from date_part's double: printing a timestamptz doubled the COPY's time, and
    # extract()'s numeric cost more than the rest of the COPY together (10M rows: the COPY
    # alone 4.5 s without a time, 8.2 s with it printed, 5.8 s with it as a number). A column
    # the pipeline does not declare is not copied (its nulls printed and parsed cost PostgreSQL
    # and the client about 0.5 s of CPU at 10M): the file gets it as nulls.
    copied = {"sink_key": "sink_key", "message_id": "message_id"}
    if spec.time_column:
        copied["sink_time"] = "CAST(date_part('epoch', sink_time) * 1000000 AS bigint)"
    if order is not None:
        copied |= {"order_key": "order_key", "order_position": "order_position"}
    copied |= {f"payload_{i}": f"payload_{i}" for i in range(1, compared + 1)}
    query = (
        f"SELECT {', '.join(f'{e} AS {c}' for c, e in copied.items())} "
        f"FROM ({sink_query(pg, spec, table, rows, payload, order, flat=True)}) q"
    )
    read_as = pa.schema(
        [pa.field(c, pa.int64()) if c == "sink_time" else schema.field(c) for c in copied]
    )
    # The ids are unique: a dictionary would only be built to be thrown away.
    return copy_to_parquet(
        pg, query, schema, path, unique=("sink_key", "message_id"), read_as=read_as
    )


def copy_to_parquet(
    pg: Any,
    query: str,
    schema: Any,
    path: str,
    unique: tuple[str, ...] = (),
    read_as: Any | None = None,
) -> int:
    """Write the rows of ``query`` to the Parquet file ``path``; returns how many.

    The rows stream from ``COPY`` through a pipe into Arrow's CSV reader and on to Parquet in
    batches: neither the CSV text nor the table is ever whole in memory or on disk.

    :param pg: an open psycopg2 connection (the COPY's read-only transaction is rolled back).
    :param query: its columns in the order of ``schema`` (or ``read_as``); times printed as
        text come out in UTC, ISO style.
    :param schema: the file's Arrow schema.
    :param unique: columns whose values are (nearly) all distinct: not dictionary-encoded.
    :param read_as: the CSV's schema, when it differs from ``schema``: by types Arrow casts
        (microseconds since the epoch for a timestamp), or by columns the query does not
        select, which the file gets as nulls; None: ``schema``.
    """
    import pyarrow.parquet as pq
    from pyarrow import csv

    read_end, write_end = os.pipe()
    failure: list[BaseException] = []

    def produce() -> None:
        try:
            with os.fdopen(write_end, "wb", buffering=1 << 20) as out, pg.cursor() as cur:
                cur.execute("SET LOCAL TimeZone = 'UTC'; SET LOCAL DateStyle = 'ISO, YMD'")
                cur.copy_expert(f"COPY ({query}) TO STDOUT WITH (FORMAT csv)", out)
        except BaseException as exc:  # re-raised below, after the reader has drained the pipe
            failure.append(exc)

    producer = threading.Thread(target=produce, name="recon-copy")
    producer.start()
    written = 0
    writer = pq.ParquetWriter(
        path, schema, compression="lz4",
        use_dictionary=[n for n in schema.names if n not in unique],
    )  # fmt: skip
    try:
        with os.fdopen(read_end, "rb") as source:
            # No row (an idle pipeline) is no CSV at all, which Arrow refuses: the Parquet file
            # is left with no row group.
            empty = not source.peek(1)
            reader = (
                []
                if empty
                else csv.open_csv(
                    source,
                    read_options=csv.ReadOptions(
                        column_names=(read_as or schema).names, block_size=8 << 20
                    ),
                    convert_options=csv.ConvertOptions(
                        column_types=read_as or schema,
                        # COPY writes NULL as an unquoted empty field and nothing else: Arrow's
                        # default markers ("NULL", "NaN", "N/A" ...) are ids like any other.
                        null_values=[""],
                        strings_can_be_null=True,
                        quoted_strings_can_be_null=False,
                    ),
                )
            )
            for batch in reader:
                writer.write_batch(batch if read_as is None else _conform(batch, schema))
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


def _conform(batch: Any, schema: Any) -> Any:
    """``batch`` with the columns and types of ``schema``: cast by name, nulls for a column it
    lacks."""
    import pyarrow as pa

    n = batch.num_rows
    names = set(batch.schema.names)
    return pa.record_batch(
        [
            batch.column(f.name).cast(f.type) if f.name in names else pa.nulls(n, f.type)
            for f in schema
        ],
        schema=schema,
    )
