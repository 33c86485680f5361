"""The sink side of a repair: the rows of the affected messages, their state, the deletes.

Every identifier is quoted with psycopg2's ``sql.Identifier``; key values travel as text arrays
cast to the key columns' own types (read from the catalog), so a delete hits the primary key
exactly as PostgreSQL compares it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

from recon.config.model import split_table
from recon.errors import ReconError
from recon.read.sink import table_columns
from recon.repair.plan_model import Delete, SinkState, SinkTarget

#: One sink row as the plan sees it: its messageId and its primary key values as text.
Row = tuple[str, tuple[str, ...]]


class RepairRefused(ReconError):
    """The repair would be unsafe or wrong: no primary key, another pipeline's plan, a delete
    that would remove a message's last copy."""


class RepairStale(RepairRefused):
    """The sink changed since the plan was made: apply a new plan."""


def key_columns(pg: Any, table: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The sink table's primary key columns and their types, in key order (empty: none)."""
    from psycopg2 import sql

    schema, name = split_table(table)
    with pg.cursor() as cur:
        cur.execute(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_index i "
            "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
            "WHERE i.indrelid = %s::regclass AND i.indisprimary "
            "ORDER BY array_position(i.indkey, a.attnum)",
            (sql.Identifier(schema, name).as_string(pg),),
        )
        rows = cur.fetchall()
    pg.rollback()
    return tuple(r[0] for r in rows), tuple(r[1] for r in rows)


def _key_text(target: SinkTarget) -> Any:
    from psycopg2 import sql

    return sql.SQL(", ").join(
        sql.SQL("{}::text").format(sql.Identifier(c)) for c in target.key_columns
    )


def affected_rows(
    pg: Any, target: SinkTarget, message_ids: Sequence[str], order_column: str | None,
    *, lock: bool = False,
) -> list[Row]:  # fmt: skip
    """The sink rows of ``message_ids``, oldest first per message (by ``order_column``, the
    ingest sequence, else by primary key); ``lock``: ``FOR UPDATE``, inside the caller's
    transaction, so nothing changes them between the check and the deletes."""
    from psycopg2 import sql

    if not message_ids:
        return []
    order = [sql.Identifier(order_column)] if order_column else []
    order += [sql.Identifier(c) for c in target.key_columns]
    query = sql.SQL(
        "SELECT {mid}::text, {keys} FROM {table} WHERE {mid}::text = ANY(%s) "
        "ORDER BY {mid}::text, {order}{lock}"
    ).format(
        mid=sql.Identifier(target.message_id_column), keys=_key_text(target),
        table=sql.Identifier(*split_table(target.table)), order=sql.SQL(", ").join(order),
        lock=sql.SQL(" FOR UPDATE") if lock else sql.SQL(""),
    )  # fmt: skip
    with pg.cursor() as cur:
        cur.execute(query, (list(message_ids),))
        return [(r[0], tuple(r[1:])) for r in cur.fetchall()]


def state_of(rows: Iterable[Row]) -> SinkState:
    """How many rows, and a SHA-256 over their messageIds and keys in a fixed order."""
    ordered = sorted(rows)
    digest = hashlib.sha256()
    for mid, key in ordered:
        digest.update(repr((mid, key)).encode())
    return SinkState(rows=len(ordered), checksum=digest.hexdigest())


def delete_statement(
    pg: Any, target: SinkTarget, deletes: Sequence[Delete]
) -> tuple[Any, tuple[Any, ...]]:
    """One ``DELETE`` of exactly the planned rows: each matched by its whole primary key and its
    messageId, so a key reused by another message since the plan deletes nothing.

    :param target: key types as the catalog has them (:func:`recon.repair.trust.check_sink`):
        they are SQL text here, so never a plan file's."""
    from psycopg2 import sql

    columns = [sql.Identifier(c) for c in target.key_columns]
    arrays = sql.SQL(", ").join(
        sql.SQL("%s::text[]::{}[]").format(sql.SQL(t)) for t in target.key_types
    )
    query = sql.SQL(
        "DELETE FROM {table} WHERE ({keys}, {mid}::text) IN "
        "(SELECT * FROM unnest({arrays}, %s::text[])) RETURNING {mid}::text"
    ).format(
        table=sql.Identifier(*split_table(target.table)), keys=sql.SQL(", ").join(columns),
        mid=sql.Identifier(target.message_id_column), arrays=arrays,
    )  # fmt: skip
    params = tuple([d.key[i] for d in deletes] for i in range(len(target.key_columns)))
    return query, (*params, [d.message_id for d in deletes])


def delete_rows(pg: Any, target: SinkTarget, deletes: Sequence[Delete], keep_one: set[str]) -> int:
    """Delete the planned rows inside the caller's transaction; refuse (nothing is committed by
    this function) when a row is missing or a message of ``keep_one`` would lose its last row."""
    from psycopg2 import sql

    if not deletes:
        return 0
    query, params = delete_statement(pg, target, deletes)
    with pg.cursor() as cur:
        cur.execute(query, params)
        deleted = cur.rowcount
        if deleted != len(deletes):
            raise RepairStale(
                f"sink {target.table}: {len(deletes)} rows planned for deletion, {deleted} "
                "found: the sink changed since the plan was made; nothing was changed"
            )
        if keep_one:
            cur.execute(
                sql.SQL("SELECT count(DISTINCT {mid}::text) FROM {table} WHERE {mid}::text = "
                        "ANY(%s)").format(mid=sql.Identifier(target.message_id_column),
                                          table=sql.Identifier(*split_table(target.table))),
                (sorted(keep_one),),
            )  # fmt: skip
            left = cur.fetchone()[0]
            if left != len(keep_one):
                raise RepairRefused(
                    f"sink {target.table}: the deletes would remove the last row of "
                    f"{len(keep_one) - left} duplicated messages; nothing was changed"
                )
    return int(deleted)


def column_names(pg: Any, table: str) -> set[str]:
    """The sink table's column names (empty: no such table)."""
    names = set(table_columns(pg, *split_table(table)))
    pg.rollback()
    return names


def insert_statement(
    pg: Any, target: SinkTarget, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> str:
    """One ``INSERT`` of the rows a repair writes itself, with its values inlined (what the dry
    run prints is what runs), returning each new row's key and messageId."""
    from psycopg2 import sql

    head = sql.SQL("INSERT INTO {table} ({columns}) VALUES ").format(
        table=sql.Identifier(*split_table(target.table)),
        columns=sql.SQL(", ").join(sql.Identifier(c) for c in columns),
    )
    tail = sql.SQL(" RETURNING {mid}::text, {keys}").format(
        mid=sql.Identifier(target.message_id_column), keys=_key_text(target)
    )
    with pg.cursor() as cur:
        marks = "(" + ", ".join(["%s"] * len(columns)) + ")"
        values = ", ".join(cur.mogrify(marks, tuple(r)).decode() for r in rows)
    return str(head.as_string(pg)) + values + str(tail.as_string(pg))


def insert_rows(pg: Any, statement: str) -> list[Row]:
    """Run :func:`insert_statement`'s statement inside the caller's transaction."""
    with pg.cursor() as cur:
        cur.execute(statement)
        return [(r[0], tuple(r[1:])) for r in cur.fetchall()]
