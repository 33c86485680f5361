"""Messages left ``pending`` by the run a new run starts from, carried into it.

A pending message is re-reported by every run until a run's window passes the records it was
seen at (``partition_ends``); then the rules judge it (``recon/rules/05_general_verdicts.sql``,
``expiry``). Its ledger entry must join each run even when none of its records or sink rows is
read again (a record that aborted, or one retention removed): the base run's results name those
messages.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from recon import store
from recon.config import PipelineConfig
from recon.paths import results_path
from recon.snapshot.window import PartitionWindow
from recon.verdicts import Verdict

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Progress = Callable[[str], None]


def partition_ends(windows: list[PartitionWindow]) -> list[tuple[int, int, int]]:
    """``(partition, window_to, log_start_offset)`` per partition: the rules' ``partition_ends``."""
    return [(w.partition, w.window_to, w.log_start_offset) for w in windows]


def removed_ranges(windows: list[PartitionWindow]) -> list[tuple[str, int, int, int]]:
    """``(topic, partition, window_from, log_start_offset)`` per partition whose window starts
    below the log-start offset: the rules' ``removed_ranges``."""
    return [(w.topic, w.partition, w.window_from, w.removed_to) for w in windows if w.unverifiable]


def carried_pending_path(data_dir: str, cfg: PipelineConfig, record: store.RunRecord) -> str | None:
    """The results of the run this one starts from, whose ``pending`` rows are the messages still
    pending (every pending message is reported again by each run until it is judged); None on
    the first run. They sit beside the base run's ledger version (``<dir>/ledger/...`` and
    ``<dir>/results/...``), wherever this run's data directory is."""
    if record.base_run_id is None:
        return None
    base = record.base_ledger_path or ""
    root = base.rsplit("/ledger/", 1)[0] if "/ledger/" in base else data_dir
    return results_path(root, cfg.name, record.base_run_id)


def spark_carried_pending(
    spark: SparkSession,
    data_dir: str,
    cfg: PipelineConfig,
    record: store.RunRecord,
    base_entries: list[str],
    progress: Progress,
) -> DataFrame:
    """The messageIds the base run left pending: their ledger entries join this run even when no
    record or sink row of theirs is read again (a record that aborted, or one retention removed),
    so that they are judged when the window passes them. Without the base run's results (a data
    directory cleaned by hand) they are found by scanning the whole ledger instead."""
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    from recon.ledger import spark as ledger_store

    path = carried_pending_path(data_dir, cfg, record)
    if path is None:
        return spark.createDataFrame([], "message_id string")
    try:
        results = spark.read.parquet(path)
    except AnalysisException:
        progress(f"run {record.run_id}: no results of run {record.base_run_id} at {path}: "
                 "the ledger is scanned for pending messages instead")  # fmt: skip
        whole = ledger_store.full_ledger(spark, base_entries)
        if whole is None:
            return spark.createDataFrame([], "message_id string")
        results = whole
    return results.filter(F.col("verdict") == Verdict.PENDING.value).select("message_id")


def local_carried_pending(
    con: Any,
    data_dir: str,
    cfg: PipelineConfig,
    record: store.RunRecord,
    base_entries: list[str],
    progress: Progress,
) -> str:
    """:func:`spark_carried_pending` in DuckDB: the view ``recon_carried``."""
    import glob
    import os

    from recon.ledger import local as ledger_store

    path = carried_pending_path(data_dir, cfg, record)
    source = None
    if path is not None and glob.glob(os.path.join(ledger_store.local_path(path), "*.parquet")):
        pattern = os.path.join(ledger_store.local_path(path), "*.parquet").replace("'", "''")
        source = "recon_base_results"
        con.execute(
            f"CREATE OR REPLACE TEMP VIEW {source} AS SELECT * FROM read_parquet('{pattern}')"
        )
    elif path is not None:
        progress(f"run {record.run_id}: no results of run {record.base_run_id} at {path}: "
                 "the ledger is scanned for pending messages instead")  # fmt: skip
        source = ledger_store.full_ledger(con, base_entries, name="recon_base_ledger")
    where = f"verdict = '{Verdict.PENDING}'" if source else "false"
    con.execute(
        "CREATE OR REPLACE TEMP VIEW recon_carried AS SELECT message_id FROM "
        f"{source or '(SELECT NULL::VARCHAR AS message_id)'} WHERE {where}"
    )
    return "recon_carried"
