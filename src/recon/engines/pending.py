"""Messages left ``pending`` by the run a new run starts from, carried into it.

A pending message is re-reported by every run until a run's window passes the records it was
seen at (``partition_ends``); then the rules judge it (``recon/rules/05_general_classified.sql``,
``expiry``). Its ledger entry must join each run even when none of its records or sink rows is
read again (a record that aborted, or one retention removed): the base run's results name those
messages.
"""

from __future__ import annotations

from recon import store
from recon.config import PipelineConfig
from recon.paths import data_dir_of, results_path
from recon.snapshot.window import PartitionWindow


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
    root = data_dir_of(record.base_ledger_path or "") or data_dir
    return results_path(root, cfg.name, record.base_run_id)
