"""A run's sink rows copied out of PostgreSQL into Parquet in step 2, for both engines: one
``COPY`` streamed through Arrow (``recon.read.sink_arrow``) while the window is read from Kafka.
The local engine always reads them so; the Spark engine does where its data directory is on the
driver's disk, instead of a read over JDBC in step 3 whose rows it then had to cache (the same
change for a declared source's rows: ``recon.read.source_copy``).

The rows a run reads depend only on its record (the ingest-sequence range step 1 fixed, the
snapshots of a sink read by ``xmin``, or the whole table: :func:`read_way`), so step 3 reads the
copy step 2 made.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from recon.config import PipelineConfig

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from recon.read.sink import SinkTable
    from recon.snapshot.sink_position import SinkPosition, SinkRange
    from recon.store import RunRecord
    from recon.store.runs import PipelineState

#: The Parquet file of the copied rows inside the copy's directory.
ROWS_FILE = "part-0.parquet"
#: Written last beside it: a copy that stopped half way is never taken for a whole one.
DONE_FILE = "_SUCCESS"


def read_way(cfg: PipelineConfig) -> tuple[str, str]:
    """How each run finds the sink rows written since the previous one, and why:
    ``sequence`` (``sink.ingest_seq_column``), ``xmin`` (the writing transaction:
    ``recon.snapshot.sink_changes``) or ``full`` (the whole table every run)."""
    sink = cfg.sink
    if sink.is_kafka:
        return "kafka", f"sink.kind kafka: topic {sink.topic} by its offsets per partition"
    if sink.ingest_seq_column:
        return "sequence", f"sink.ingest_seq_column '{sink.ingest_seq_column}' is declared"
    if sink.incremental == "full":
        return "full", "sink.incremental: full (the whole table every run)"
    if sink.incremental == "xmin":
        return "xmin", "sink.incremental: xmin (no ingest sequence declared)"
    if cfg.order is not None:
        # The order check compares each key of the window with the row its key holds now, and
        # that row may be older than the previous run.
        return "full", "order is declared: its check reads every key's row (sink.incremental)"
    return "xmin", "no sink.ingest_seq_column: the rows' writing transactions (sink.incremental)"


def sink_position_for_run(
    cfg: PipelineConfig, pg: Any, table: Any, base: PipelineState
) -> tuple[SinkPosition | None, PipelineState, str | None]:
    """Step 1's sink position of a new run, the state its range starts from, and what the run
    says about how it reads the sink (None: nothing to say).

    :param pg: an open psycopg2 connection to the sink database.
    :param table: the table as a ``sql.Identifier``.
    :param base: what the last committed run left; returned without its sink snapshot when the
        whole table is to be read (``recon.snapshot.sink_changes.full_copy_reason``).
    """
    from recon.snapshot.sink_changes import full_copy_reason, take_sink_snapshot
    from recon.snapshot.sink_position import take_sink_position

    way = read_way(cfg)[0]
    if way == "sequence":
        seq = cfg.sink.ingest_seq_column
        assert seq is not None
        return take_sink_position(pg, table, seq, base.sink_position), base, None
    if way == "full":
        return None, base, "sink read whole (sink.incremental: full)"
    position, frozen = take_sink_snapshot(pg, table)
    assert position.snapshot is not None
    reason = full_copy_reason(base.sink_snapshot, position.snapshot, frozen)
    if reason is None:
        return position, base, f"sink read by xmin: the rows changed since run {base.run_id}"
    return position, replace(base, sink_snapshot=None), f"sink read whole (full copy): {reason}"


def run_sink_range(cfg: PipelineConfig, record: RunRecord) -> tuple[SinkRange | None, bool]:
    """The range of the sink rows a run reads (None: the whole table), and whether it reads
    none (the table was empty when step 1 took the sink's position), for both engines and both
    ways of reading. Read by ``xmin``, the range is the previous and this run's snapshots
    (``SinkRange.changed_where``); step 1 left out the previous one when the whole table is to
    be read."""
    way = read_way(cfg)[0]
    if way == "full" or (way == "xmin" and record.sink_snapshot_to is None):
        return None, False
    rows = record.sink_range
    return rows, way == "sequence" and rows.seq_to is None


def copy_sink_rows_for_run(
    cfg: PipelineConfig, record: RunRecord, table: SinkTable, directory: str
) -> int:
    """The run's sink rows into ``directory`` (``part-0.parquet``, then ``_SUCCESS``).

    :param table: the sink table as step 1 read it from the catalog.
    :returns: the number of rows copied.
    """
    import pyarrow.parquet as pq

    from recon.read.sink_arrow import copy_sink_rows, sink_schema
    from recon.run.services import sink_db

    os.makedirs(directory, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.remove(f"{directory}/{DONE_FILE}")
    path = f"{directory}/{ROWS_FILE}"
    if cfg.sink.is_kafka:
        from recon.read.target_copy import copy_target_records
        from recon.snapshot.target_step import ranges_of

        assert cfg.sink.topic is not None
        ranges = ranges_of(cfg.sink.topic, record.sink_snapshot_to)
        n = copy_target_records(cfg, ranges, path, directory)
    else:
        with sink_db(cfg) as pg:
            rows, empty = run_sink_range(cfg, record)
            if empty:
                pq.write_table(sink_schema(len(table.payload_kinds)).empty_table(), path)
                n = 0
            else:
                n = copy_sink_rows(pg, cfg.sink, table, rows, path, cfg.payload, cfg.order)
    open(f"{directory}/{DONE_FILE}", "w").close()
    return n


def is_copied(directory: str) -> bool:
    """Whether ``directory`` holds a whole copy of a run's sink rows."""
    return os.path.exists(f"{directory}/{DONE_FILE}")


def read_sink_copy(spark: SparkSession, directory: str) -> DataFrame:
    """The rules' ``sink_rows`` on Spark over the copy in ``directory`` (the local engine's
    DuckDB view is the same statement: ``recon.read.sink_arrow.sink_rows_sql``)."""
    from recon.read.sink_arrow import sink_rows_sql
    from recon.rules.render import for_dialect

    frame = spark.read.parquet(f"{directory}/{ROWS_FILE}")
    frame.createOrReplaceTempView("recon_sink_copy")
    return spark.sql(for_dialect(sink_rows_sql("recon_sink_copy", frame.columns), "spark"))
