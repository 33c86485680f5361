"""A run's source rows (``source:``, an outbox table): the third party of a three-way run.

Each run reads the rows written within the source's horizon up to its snapshot (``created <=
snapshot_at``): the window's records were published before the snapshot, so the row of every one
of them that has a source row is there, and a record that none names is ``unsourced``. A row is
judged by exactly one run, the one in whose settle interval it was written: after the base run's
``snapshot_at - settle_seconds`` and at most this run's (a re-run of a run id judges the same
rows). The rules' input ``source_rows`` (``recon.rules``) has ``message_id, source_key, judge``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from recon.config import PipelineConfig, SourceSpec
from recon.errors import SourceTableError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from recon.config.connections import PostgresConnection


@dataclass(frozen=True)
class SourceTimes:
    """Which source rows a run reads, and which of them it judges.

    :param read_from: rows written after this are read (exclusive).
    :param snapshot_at: ... and at or before this (the run's snapshot).
    :param settled_from: rows written after this are judged (None: every settled one read).
    :param settled_to: ... and at or before this (the snapshot minus the settle time).
    """

    read_from: datetime
    snapshot_at: datetime
    settled_from: datetime | None
    settled_to: datetime


def source_times(
    cfg: PipelineConfig, snapshot_at: datetime, base_snapshot_at: datetime | None
) -> SourceTimes:
    """The run's :class:`SourceTimes`.

    :param base_snapshot_at: the snapshot time of the run this one continues (None: the first).
    """
    assert cfg.source is not None
    settle = timedelta(seconds=cfg.settle_seconds)
    horizon_from = snapshot_at - timedelta(hours=cfg.source.horizon_hours)
    settled_from = None if base_snapshot_at is None else base_snapshot_at - settle
    # Rows that settled since the base run are judged even when that was longer ago than the
    # horizon: a long pause must not skip them.
    read_from = horizon_from if settled_from is None else min(horizon_from, settled_from)
    return SourceTimes(read_from, snapshot_at, settled_from, snapshot_at - settle)


@dataclass(frozen=True)
class SourceTable:
    """What a source table's catalog says (:func:`inspect_source`).

    :param time_type: the time column's type (``format_type``).
    :param named_once: the catalog proves that no two rows name one messageId: the messageId
        column alone carries a valid unique index with no predicate (a primary key,
        ``UNIQUE``). A run of such a source skips the search for ids named twice (Spark, 10M
        rows: about 14 s); an upstream topic, or a table without that proof, is searched. Equal
        values are equal texts for every type such a column has in practice (text, uuid,
        integers), so the copied ``message_id::text`` inherits the uniqueness.
    """

    time_type: str
    named_once: bool = False


def inspect_source(pg: Any, cfg: PipelineConfig) -> SourceTable:
    """Check that the source table and its declared columns exist; its time column's type and
    whether each messageId is named once.

    :raises SourceTableError: naming the pipeline and the key.
    """
    from recon.config.model import split_table
    from recon.read.sink import table_columns

    spec = _spec(cfg)
    schema, name = split_table(spec.table)
    columns = table_columns(pg, schema, name)
    pg.rollback()
    where = f"pipeline '{cfg.name}': source"
    if not columns:
        raise SourceTableError(f"{where}.table: table {schema}.{name} does not exist")
    for key in ("message_id_column", "time_column", "key_column"):
        column = getattr(spec, key)
        if column is not None and column not in columns:
            raise SourceTableError(f"{where}.{key}: table {schema}.{name} has no column '{column}'")
    time_type = columns[spec.time_column]
    if not time_type.startswith("timestamp"):
        raise SourceTableError(
            f"{where}.time_column: column '{spec.time_column}' of table {schema}.{name} is "
            f"{time_type}, expected timestamp with time zone (or without, read as UTC)"
        )
    with pg.cursor() as cur:
        cur.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_attribute a "
            "ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] "
            "WHERE i.indrelid = to_regclass(format('%%I.%%I', %s, %s)) AND i.indisunique "
            "AND i.indisvalid AND i.indpred IS NULL AND i.indexprs IS NULL "
            "AND i.indnkeyatts = 1 AND a.attname = %s)",
            (schema, name, spec.message_id_column),
        )
        row = cur.fetchone()
    pg.rollback()
    return SourceTable(time_type, bool(row and row[0]))


def untimed_source_rows(cfg: PipelineConfig) -> int:
    """How many rows of the source table have no time: a null or an infinite
    ``source.time_column`` (0 for a topic source: every record has a timestamp).

    Such a row is never read (no run's interval holds it), so its message is never judged: an
    outbox whose relay fills the column only when it publishes (a ``published_at``) would hide
    exactly the messages never published. Each run counts them for its summary (``recon.runs.
    unchecked``). An index on the column answers the count; without one it scans the table.
    """
    from psycopg2 import sql

    from recon.config.model import split_table
    from recon.run.services import source_db

    if cfg.source is None or cfg.source.is_topic:
        return 0
    spec = _spec(cfg)
    column = sql.Identifier(spec.time_column)
    # Equalities, not isfinite(): a btree index on the column can answer them.
    statement = sql.SQL(
        "SELECT count(*) FROM {table} WHERE {c} IS NULL OR {c} = 'infinity' OR {c} = '-infinity'"
    ).format(table=sql.Identifier(*split_table(spec.table)), c=column)
    with source_db(cfg) as pg, pg.cursor() as cur:
        cur.execute(statement)
        row = cur.fetchone()
        pg.rollback()
    return int(row[0]) if row else 0


def source_query(pg: Any, cfg: PipelineConfig, times: SourceTimes, time_type: str) -> str:
    """The statement that reads the run's source rows (``message_id, source_key, judge``).

    :param time_type: the time column's type (:func:`inspect_source`).
    """
    from psycopg2 import sql

    from recon.config.model import split_table
    from recon.read.sink import as_timestamptz

    spec = _spec(cfg)
    created = as_timestamptz(spec.time_column, time_type)
    message_id = sql.SQL("{}::text").format(sql.Identifier(spec.message_id_column))
    # Without a key column a row is named by its messageId (``00_source_ids``): not read twice.
    key = (
        sql.SQL("{}::text").format(sql.Identifier(spec.key_column))
        if spec.key_column is not None
        else sql.SQL("NULL::text")
    )
    settled = sql.SQL("{created} <= %(settled_to)s").format(created=created)
    if times.settled_from is not None:
        settled = sql.SQL("{created} > %(settled_from)s AND {rest}").format(
            created=created, rest=settled
        )
    statement = sql.SQL(
        "SELECT {message_id} AS message_id, {key} AS source_key, ({settled}) AS judge "
        "FROM {table} WHERE {created} > %(read_from)s AND {created} <= %(snapshot_at)s"
    ).format(
        message_id=message_id, key=key, settled=settled, created=created,
        table=sql.Identifier(*split_table(spec.table)),
    )  # fmt: skip
    params = {
        "read_from": times.read_from, "snapshot_at": times.snapshot_at,
        "settled_from": times.settled_from, "settled_to": times.settled_to,
    }  # fmt: skip
    with pg.cursor() as cur:
        text: bytes = cur.mogrify(statement, params)
    return text.decode()


def read_source_rows(spark: SparkSession, conn: PostgresConnection, query: str,
                     slices: int = 4) -> DataFrame:  # fmt: skip
    """The Spark engine's read of :func:`source_query`: ``slices`` JDBC reads side by side, split
    by a hash of the messageId (a time column gives no integer range to split by; one read of
    10M rows was one task on one core).
    """
    from recon.read.sink import jdbc_read_properties

    props = jdbc_read_properties(conn)
    predicates = [
        f"abs(mod(hashtext(coalesce(message_id, '')), {slices})) = {i}" for i in range(slices)
    ]
    return spark.read.jdbc(conn.jdbc_url, f"({query}) AS recon_source_rows",
                           predicates=predicates, properties=props)  # fmt: skip


def source_schema() -> Any:
    """The Arrow schema of the local engine's source rows file (``judge`` as 1/0: Arrow's CSV
    reader takes no ``t``/``f``; the rules' input reads it as a boolean)."""
    import pyarrow as pa

    return pa.schema(
        [("message_id", pa.string()), ("source_key", pa.string()), ("judge", pa.int8())]
    )


@dataclass(frozen=True)
class _TableSource:
    """A table source's declared names (``SourceSpec`` leaves them optional for a topic)."""

    table: str
    message_id_column: str
    time_column: str
    key_column: str | None


def _spec(cfg: PipelineConfig) -> _TableSource:
    spec: SourceSpec | None = cfg.source
    if spec is None or spec.table is None:
        raise SourceTableError(f"pipeline '{cfg.name}': declares no source table")
    # The declaration requires both with a table (recon.config.source_decl).
    assert spec.message_id_column is not None and spec.time_column is not None
    return _TableSource(spec.table, spec.message_id_column, spec.time_column, spec.key_column)
