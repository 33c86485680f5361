"""Messages left ``pending`` by the run a new run starts from, carried into it.

A pending message is re-reported by every run until a run's window passes the records it was
seen at (``partition_ends``); then the rules judge it (``recon/rules/05_general_classified.sql``,
``expiry``). Its ledger entry must join each run even when none of its records or sink rows is
read again (a record that aborted, or one retention removed): the base run's results name those
messages.
"""

from __future__ import annotations

from recon import store
from recon.run.paths import data_dir_of, results_path
from recon.snapshot.window import PartitionWindow


def partition_ends(windows: list[PartitionWindow]) -> list[tuple[int, int, int, int]]:
    """``(partition, window_to, log_start_offset, last_stable_offset)`` per partition: the
    rules' ``partition_ends`` (a pending record below the last stable offset was read
    committed)."""
    return [(w.partition, w.window_to, w.log_start_offset, w.last_stable_offset) for w in windows]


#: How many partitions a compaction detail names before it stops.
MAX_PARTITIONS_IN_DETAIL = 5


def compaction_gaps(
    windows: list[PartitionWindow], counted: dict[tuple[str, int], int]
) -> list[tuple[str, int, int, int, int, str]]:
    """``(topic, partition, from_offset, to_offset, missing, detail)`` per partition of a
    compacted topic whose read range ``[read_from, pending_to)`` holds fewer committed records
    than offsets: the log cleaner may have removed the records of the offsets missing there
    (or they are transaction markers and aborted records: a run cannot tell them apart). The
    rules' ``compaction_gaps``; ``detail`` (the same on every row) names the partitions and
    their gaps for the verdicts it makes ``unverifiable``.

    :param counted: committed records read per ``(topic, partition)`` (``10_committed_counts``).
    """
    gapped = [
        (w, w.pending_to - w.read_from - counted.get((w.topic, w.partition), 0))
        for w in windows
        if w.compacted and w.pending_to > w.read_from
    ]
    gapped = [(w, missing) for w, missing in gapped if missing > 0]
    named = [
        f"partition {w.partition}: {missing} of the {w.pending_to - w.read_from} offsets "
        f"{w.read_from}-{w.pending_to - 1} hold no committed record"
        for w, missing in gapped[:MAX_PARTITIONS_IN_DETAIL]
    ]
    if len(gapped) > MAX_PARTITIONS_IN_DETAIL:
        named.append(f"and {len(gapped) - MAX_PARTITIONS_IN_DETAIL} more partitions")
    detail = (
        "no committed record found, and the topic is compacted (cleanup.policy "
        f"{gapped[0][0].cleanup_policy}): compaction may have removed it ({'; '.join(named)})"
        if gapped else ""
    )  # fmt: skip
    return [
        (w.topic, w.partition, w.read_from, w.pending_to, missing, detail) for w, missing in gapped
    ]


def removed_ranges(windows: list[PartitionWindow]) -> list[tuple[str, int, int, int]]:
    """``(topic, partition, window_from, log_start_offset)`` per partition whose window starts
    below the log-start offset: the rules' ``removed_ranges``."""
    return [(w.topic, w.partition, w.window_from, w.removed_to) for w in windows if w.unverifiable]


def carried_pending_path(data_dir: str, pipeline: str, record: store.RunRecord) -> str | None:
    """The results of the run this one starts from, whose ``pending`` rows are the messages still
    pending (every pending message is reported again by each run until it is judged); None on
    the first run. They sit beside the base run's ledger version (``<dir>/ledger/...`` and
    ``<dir>/results/...``), wherever this run's data directory is."""
    if record.base_run_id is None:
        return None
    root = data_dir_of(record.base_ledger_path or "") or data_dir
    return results_path(root, pipeline, record.base_run_id)
