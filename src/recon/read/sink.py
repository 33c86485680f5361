"""Reading the sink rows that matter for a run, through JDBC in parallel slices.

With an ``ingest_seq_column`` only the run's rows are read
(``recon.snapshot.sink_position.SinkRange``: the new ones up to the sequence at snapshot, and the
ones that committed late below it), sliced on that column. Without one, the rows written since
the previous run's snapshot and the other rows of their messages (``SinkRange.changed_where``),
or the whole table (``recon.read.sink_copy.read_way``), as one slice plus ``fetchsize``
streaming (slices on ``ctid`` pages would need a server-side helper).
Identifiers are quoted with psycopg2's ``sql.Identifier``; nothing from the YAML is pasted into
SQL unquoted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from recon.config import OrderSpec, PayloadSpec, SinkSpec
from recon.config.connections import PostgresConnection
from recon.config.model import split_table
from recon.errors import SinkTableError
from recon.read.sink_order import check_order_columns, order_expressions
from recon.read.sink_payload import payload_expression, payload_items, payload_kinds
from recon.snapshot.sink_position import SinkRange

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class SinkTable:
    """What the catalog says about the sink table."""

    schema: str
    table: str
    key_columns: tuple[str, ...]  # the primary key; empty: none (ctid stands in)
    #: ``sink.time_column``'s type: ``timestamp with time zone`` or ``timestamp without time
    #: zone`` (read as UTC); None when the pipeline declares none.
    time_type: str | None = None
    #: ``payload``'s columns: their types (``format_type``) and how each is compared
    #: (``recon.read.sink_payload.KINDS``), in its order; empty when it declares none.
    payload_types: tuple[str, ...] = ()
    payload_kinds: tuple[str, ...] = ()

    def identifier(self) -> Any:
        from psycopg2 import sql

        return sql.Identifier(self.schema, self.table)


def table_columns(pg: Any, schema: str, name: str) -> dict[str, str]:
    """A table's columns and their types (``format_type``); empty when there is no such table.

    :param pg: an open psycopg2 connection.
    """
    with pg.cursor() as cur:
        cur.execute(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
            "JOIN pg_class c ON c.oid = a.attrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped",
            (schema, name),
        )
        return dict(cur.fetchall())


def inspect_sink(
    pg: Any,
    spec: SinkSpec,
    pipeline: str,
    payload: PayloadSpec | None = None,
    order: OrderSpec | None = None,
) -> SinkTable:
    """Check that the table and its columns exist; read the primary key.

    :param pg: an open psycopg2 connection to the sink database.
    :param spec: the pipeline's sink declaration.
    :param pipeline: named in errors.
    :param payload: the pipeline's ``payload``: its columns are checked and their kinds read.
    :param order: the pipeline's ``order``: its key and position columns are checked.
    :raises recon.errors.SinkTableError: the table, or a declared column, is missing or of a
        type its check cannot read.
    """
    from psycopg2 import sql

    schema, name = split_table(spec.table)
    columns = table_columns(pg, schema, name)
    with pg.cursor() as cur:
        if not columns:
            raise SinkTableError(
                f"pipeline '{pipeline}': sink.table: table {schema}.{name} does not exist"
            )
        for key in ("message_id_column", "ingest_seq_column", "time_column", "keep_first_by"):
            column = getattr(spec, key)
            if column is not None and column not in columns:
                raise SinkTableError(
                    f"pipeline '{pipeline}': sink.{key}: table {schema}.{name} has no column "
                    f"'{column}'"
                )
        cur.execute(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
            "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::regclass AND i.indisprimary "
            "ORDER BY array_position(i.indkey, a.attnum)",
            (sql.Identifier(schema, name).as_string(pg),),
        )
        keys = tuple(row[0] for row in cur.fetchall())
    pg.rollback()
    time_type = None
    if spec.time_column is not None:
        # A latency measured against a date or a text column would be wrong without saying so.
        time_type = columns[spec.time_column]
        if not time_type.startswith("timestamp"):
            raise SinkTableError(
                f"pipeline '{pipeline}': sink.time_column: column '{spec.time_column}' of table "
                f"{schema}.{name} is {time_type}, expected timestamp with time zone "
                "(or timestamp without time zone, read as UTC)"
            )
    kinds = payload_kinds(columns, payload, f"{schema}.{name}", pipeline) if payload else ()
    if order is not None:
        check_order_columns(columns, order, f"{schema}.{name}", pipeline)
    return SinkTable(
        schema=schema, table=name, key_columns=keys, time_type=time_type,
        payload_types=tuple(columns[c] for c in payload.columns) if payload else (),
        payload_kinds=kinds,
    )  # fmt: skip


def _time_expression(spec: SinkSpec, table: SinkTable) -> Any:
    """``sink.time_column`` as ``timestamptz`` (a zoneless timestamp read as UTC), or NULL.

    An infinite time (PostgreSQL's ``infinity``) has no instant: NULL, as a missing one, for
    both engines' reads (JDBC would give a date millennia away, Arrow would refuse it).
    """
    from psycopg2 import sql

    if spec.time_column is None:
        return sql.SQL("NULL::timestamptz")
    return sql.SQL("CASE WHEN isfinite({}) THEN {} END").format(
        sql.Identifier(spec.time_column), as_timestamptz(spec.time_column, table.time_type)
    )


def as_timestamptz(column: str, column_type: str | None) -> Any:
    """A timestamp column as ``timestamptz`` (a zoneless one read as UTC), composed.

    :param column_type: its type as ``format_type`` names it.
    """
    from psycopg2 import sql

    if column_type is not None and "without time zone" in column_type:
        return sql.SQL("({} AT TIME ZONE 'UTC')").format(sql.Identifier(column))
    return sql.SQL("{}::timestamptz").format(sql.Identifier(column))


def sink_query(
    pg: Any,
    spec: SinkSpec,
    table: SinkTable,
    rows: SinkRange | None,
    payload: PayloadSpec | None = None,
    order: OrderSpec | None = None,
    *,
    flat: bool = False,
) -> str:
    """The subquery Spark reads: ``sink_key, message_id, ingest_seq, sink_time, payload,
    order_key, order_position`` for the run's rows (each optional column is null unless the
    pipeline declares what it comes from: ``sink.time_column``, ``payload``, ``order``).

    :param pg: a psycopg2 connection (only used to quote identifiers).
    :param spec: the sink declaration.
    :param table: the inspected table.
    :param rows: the run's range of the ingest sequence, or its snapshots for a sink read by
        ``xmin`` (None: the whole table).
    :param payload: the pipeline's ``payload`` (``table`` inspected with it).
    :param order: the pipeline's ``order`` (``table`` inspected with it).
    :param flat: each compared column as a column of its own (``payload_1``, ``payload_2``, ...)
        instead of ``payload``, for a reader without lists (``COPY`` as CSV): no array is built
        per row. With nothing compared there is no payload column at all.
    """
    from psycopg2 import sql

    if table.key_columns:
        key = sql.SQL(" || ',' || ").join(
            sql.SQL("{}::text").format(sql.Identifier(c)) for c in table.key_columns
        )
    else:
        key = sql.SQL("ctid::text")
    seq = sql.Identifier(spec.ingest_seq_column) if spec.ingest_seq_column else None
    where: list[sql.Composable] = []
    if seq is not None and rows is not None:
        where.append(rows.where(seq))
    elif rows is not None:
        changed = rows.changed_where(
            sql.Identifier(spec.message_id_column), sql.Identifier(table.schema, table.table)
        )
        if changed is not None:
            where.append(changed)
    types = dict(zip(payload.columns, table.payload_types, strict=True)) if payload else {}
    order_key, order_position = order_expressions(order)
    # The select list as parts: a flat read with nothing compared has no payload column at all.
    columns: list[sql.Composable] = [
        sql.SQL("{} AS sink_key").format(key),
        sql.SQL("{}::text AS message_id").format(sql.Identifier(spec.message_id_column)),
        sql.SQL("{} AS ingest_seq").format(
            sql.SQL("{}::bigint").format(seq) if seq is not None else sql.SQL("NULL::bigint")
        ),
        sql.SQL("{} AS sink_time").format(_time_expression(spec, table)),
    ]
    if flat:
        columns += [
            sql.SQL("{} AS {}").format(item, sql.Identifier(f"payload_{i}"))
            for i, item in enumerate(payload_items(payload, types) if payload else [], 1)
        ]
    else:
        columns.append(sql.SQL("{} AS payload").format(payload_expression(payload, types)))
    columns += [
        sql.SQL("{} AS order_key").format(order_key),
        sql.SQL("{} AS order_position").format(order_position),
    ]
    query = sql.SQL("SELECT {} FROM {}").format(
        sql.SQL(", ").join(columns), sql.Identifier(table.schema, table.table)
    )
    if where:
        query = query + sql.SQL(" WHERE ") + sql.SQL(" AND ").join(where)
    return str(query.as_string(pg))


def jdbc_read_properties(conn: PostgresConnection) -> dict[str, str]:
    """The JDBC properties of a Spark read from PostgreSQL (the sink's rows, a source's rows):
    the connection's, streamed ``fetchsize`` rows at a time rather than held whole."""
    return {**conn.jdbc_properties(), "fetchsize": "10000"}


def read_sink_rows(
    spark: SparkSession,
    conn: PostgresConnection,
    query: str,
    seq_from: int | None,
    seq_to: int | None,
    slices: int = 4,
) -> DataFrame:
    """Read the run's sink rows, in ``slices`` parallel ranges of the ingest sequence when known.

    :param spark: the session.
    :param conn: the sink's connection.
    :param query: from :func:`sink_query`.
    :param seq_from: exclusive lower bound (sets the slice stride, does not filter).
    :param seq_to: inclusive upper bound.
    :param slices: number of JDBC partitions.
    """
    props = jdbc_read_properties(conn)
    subquery = f"({query}) AS recon_sink_rows"
    if seq_to is not None and slices > 1:
        low = (seq_from or 0) + 1
        if seq_to > low:
            return spark.read.jdbc(
                conn.jdbc_url,
                subquery,
                column="ingest_seq",
                lowerBound=low,
                upperBound=seq_to + 1,
                numPartitions=slices,
                properties=props,
            )
    return spark.read.jdbc(conn.jdbc_url, subquery, properties=props)
