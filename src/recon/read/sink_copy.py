"""A run's sink rows copied out of PostgreSQL into Parquet in step 2, for both engines: one
``COPY`` streamed through Arrow (``recon.read.sink_arrow``) while the window is read from Kafka.
The local engine always reads them so; the Spark engine does where its data directory is on the
driver's disk, instead of a read over JDBC in step 3 whose rows it then had to cache (the same
change for a declared source's rows: ``recon.read.source_copy``).

The rows a run reads depend only on its record (the ingest-sequence range step 1 fixed, or the
whole table when the sink declares none), so step 3 reads the copy step 2 made.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

from recon.config import PipelineConfig

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from recon.snapshot.sink_position import SinkRange
    from recon.store import RunRecord

#: The Parquet file of the copied rows inside the copy's directory.
ROWS_FILE = "part-0.parquet"
#: Written last beside it: a copy that stopped half way is never taken for a whole one.
DONE_FILE = "_SUCCESS"


def run_sink_range(cfg: PipelineConfig, record: RunRecord) -> tuple[SinkRange | None, bool]:
    """The ingest-sequence range of the sink rows a run reads (None: the whole table, for a sink
    without an ingest sequence), and whether it reads none (the table was empty when step 1 took
    the sink's position), for both engines and both ways of reading."""
    rows = record.sink_range if cfg.sink.ingest_seq_column else None
    return rows, rows is not None and rows.seq_to is None


def copy_sink_rows_for_run(cfg: PipelineConfig, record: RunRecord, directory: str) -> int:
    """The run's sink rows into ``directory`` (``part-0.parquet``, then ``_SUCCESS``).

    :returns: the number of rows copied.
    """
    import pyarrow.parquet as pq

    from recon.read.sink import inspect_sink
    from recon.read.sink_arrow import copy_sink_rows, sink_schema
    from recon.services import sink_db

    os.makedirs(directory, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.remove(f"{directory}/{DONE_FILE}")
    path = f"{directory}/{ROWS_FILE}"
    with sink_db(cfg) as pg:
        table = inspect_sink(pg, cfg.sink, cfg.name, cfg.payload, cfg.order)
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
