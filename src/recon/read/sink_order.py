"""The sink side of ``order``: the upsert key and position columns, checked and read.

The key travels as text (it is compared with the record's key as text), the position as a
``bigint``; a position column that is not a whole number is refused before anything is read,
naming the pipeline and the column.
"""

from __future__ import annotations

from typing import Any

from recon.config import OrderSpec
from recon.errors import SinkTableError

_WHOLE_NUMBERS = ("smallint", "integer", "bigint")


def check_order_columns(
    columns: dict[str, str], order: OrderSpec, table: str, pipeline: str
) -> None:
    """Refuse an ``order`` whose columns the table lacks, or whose position is no whole number.

    :param columns: the table's columns and their types (``format_type``).
    :raises SinkTableError: naming the pipeline, the key and the column.
    """
    for key in ("key_column", "position_column"):
        column = getattr(order, key)
        if column not in columns:
            raise SinkTableError(
                f"pipeline '{pipeline}': order.{key}: table {table} has no column '{column}'"
            )
    pg_type = columns[order.position_column]
    scale_zero = pg_type.startswith("numeric(") and pg_type.endswith(",0)")
    if pg_type not in _WHOLE_NUMBERS and not scale_zero:
        raise SinkTableError(
            f"pipeline '{pipeline}': order.position_column: column '{order.position_column}' of "
            f"table {table} is {pg_type}, expected a whole number (the record's offset or "
            "version)"
        )


def order_expressions(order: OrderSpec | None) -> tuple[Any, Any]:
    """``sink_rows.order_key`` and ``order_position`` as SQL (NULLs without ``order``)."""
    from psycopg2 import sql

    if order is None:
        return sql.SQL("NULL::text"), sql.SQL("NULL::bigint")
    key = sql.SQL("{}::text").format(sql.Identifier(order.key_column))
    return key, sql.SQL("{}::bigint").format(sql.Identifier(order.position_column))
