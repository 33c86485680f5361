"""The sink side of ``payload``: which sink columns are compared how, and how they are read.

A compared column's *kind* follows its PostgreSQL type, so that the rules compare what the
consumer meant to keep rather than how PostgreSQL prints it: numbers as numbers (``12.50`` equals
the JSON ``12.5``), booleans as booleans, timestamps as instants, anything else as text. Every
column travels as text (``sink_rows.payload``, in the order the pipeline declares); the rules
(``recon.rules.judging``) compare by kind. A column no kind fits (``json``, ``bytea``, arrays)
is refused before the run reads anything, naming the pipeline and the column.
"""

from __future__ import annotations

from typing import Any

from recon.config import PayloadSpec
from recon.errors import SinkTableError

#: The kinds of compared content; ``sha256`` is a hex digest (compared case-insensitively).
KINDS = ("text", "number", "boolean", "time", "sha256")

_NUMBER_TYPES = ("smallint", "integer", "bigint", "real", "double precision", "numeric")
_REFUSED_TYPES = ("json", "jsonb", "bytea", "xml")


def kind_of(pg_type: str, hashed: bool) -> str | None:
    """How a column of ``pg_type`` (as ``format_type`` prints it) is compared; None: refused.

    :param hashed: the column is ``payload.sha256_column`` (a hex digest, text or bytea).
    """
    base = pg_type.split("(", 1)[0].strip()
    if pg_type.endswith("[]"):
        return None
    if hashed:
        text_like = base in ("text", "character varying", "character", "bytea")
        return "sha256" if text_like else None
    if base in _REFUSED_TYPES:
        return None
    if base in _NUMBER_TYPES:
        return "number"
    if base == "boolean":
        return "boolean"
    if base.startswith("timestamp") or base == "date":
        return "time"
    return "text"


def payload_kinds(
    columns: dict[str, str], payload: PayloadSpec, table: str, pipeline: str
) -> tuple[str, ...]:
    """The kind of each compared column, in :attr:`PayloadSpec.columns` order.

    :param columns: the table's columns and their types (``format_type``).
    :raises SinkTableError: a column is missing or of a refused type.
    """
    key = "sha256_column" if payload.sha256_column else "fields"
    kinds = []
    for name, column in zip(payload.compared, payload.columns, strict=True):
        where = f"pipeline '{pipeline}': payload.{key}"
        if key == "fields":
            where += f".{name}"
        if column not in columns:
            raise SinkTableError(f"{where}: table {table} has no column '{column}'")
        kind = kind_of(columns[column], hashed=payload.sha256_column is not None)
        if kind is None:
            expected = (
                "text or bytea (the hex SHA-256 of the raw value)"
                if payload.sha256_column
                else "a number, boolean, timestamp or text type (compare it through "
                "sha256_column instead)"
            )
            raise SinkTableError(
                f"{where}: column '{column}' of table {table} is {columns[column]}, expected "
                f"{expected}"
            )
        kinds.append(kind)
    return tuple(kinds)


def payload_expression(payload: PayloadSpec | None, columns: dict[str, str]) -> Any:
    """``sink_rows.payload``: :func:`payload_items` as a ``text[]`` in declared order (NULL when
    the pipeline declares no ``payload``).

    :param columns: the table's columns and their types (``format_type``).
    """
    from psycopg2 import sql

    if payload is None:
        return sql.SQL("NULL::text[]")
    return sql.SQL("ARRAY[{}]::text[]").format(sql.SQL(", ").join(payload_items(payload, columns)))


def payload_items(payload: PayloadSpec, columns: dict[str, str]) -> list[Any]:
    """Each compared column as text, in declared order: a timestamp as ISO 8601 with its offset
    (a zoneless one read as UTC), a digest in lower case; the rest as PostgreSQL prints it.

    :param columns: the table's columns and their types (``format_type``).
    """
    from psycopg2 import sql

    items = []
    for column in payload.columns:
        name, pg_type = sql.Identifier(column), columns[column]
        if pg_type == "bytea":
            items.append(sql.SQL("encode({}, 'hex')").format(name))
        elif payload.sha256_column:
            items.append(sql.SQL("lower(btrim({}::text))").format(name))
        elif pg_type.startswith("timestamp") and "without time zone" in pg_type:
            items.append(sql.SQL("to_jsonb({} AT TIME ZONE 'UTC') #>> '{{}}'").format(name))
        elif pg_type.startswith("timestamp"):
            items.append(sql.SQL("to_jsonb({}) #>> '{{}}'").format(name))
        else:
            items.append(sql.SQL("{}::text").format(name))
    return items
