"""Which partitions a run hands the rules as ``compaction_gaps``: a compacted topic's read range
with fewer committed records than offsets (``recon.engines.pending.compaction_gaps``), and the
topic policy the window keeps."""

from __future__ import annotations

import pytest

from recon.engines.pending import MAX_PARTITIONS_IN_DETAIL, compaction_gaps, partition_ends
from recon.snapshot.window import PartitionOffsets, is_compacted, plan_windows

pytestmark = pytest.mark.unit


def _offsets(partition: int, policy: str | None, end: int = 16) -> PartitionOffsets:
    return PartitionOffsets(
        topic="t", partition=partition, log_start_offset=0, last_stable_offset=end,
        high_watermark=end, committed_offset=end - 2, settled_offset=None,
        cleanup_policy=policy,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("policy", "compacted"),
    [("compact", True), ("compact,delete", True), ("delete,compact", True), ("COMPACT", True),
     ("delete", False), (None, False), ("", False)],
)  # fmt: skip
def test_a_policy_with_compact_is_compacted(policy: str | None, compacted: bool) -> None:
    assert is_compacted(policy) is compacted
    [w] = plan_windows([_offsets(0, policy)], {})
    assert (w.cleanup_policy, w.compacted) == (policy, compacted)


def test_gaps_of_a_compacted_topic_name_partition_and_range() -> None:
    windows = plan_windows([_offsets(0, "compact"), _offsets(1, "compact")], {})
    # Partition 0: 6 records read of 16 offsets (read range [0, 16): pending up to the LSO).
    rows = compaction_gaps(windows, {("t", 0): 6, ("t", 1): 16})
    assert [r[:5] for r in rows] == [("t", 0, 0, 16, 10)]
    detail = rows[0][5]
    assert "compacted (cleanup.policy compact)" in detail
    assert "partition 0: 10 of the 16 offsets 0-15 hold no committed record" in detail


def test_no_gaps_without_compaction_or_without_missing_offsets() -> None:
    deleted = plan_windows([_offsets(0, "delete")], {})
    assert compaction_gaps(deleted, {("t", 0): 3}) == []  # gaps there are markers or aborts
    compacted = plan_windows([_offsets(0, "compact")], {})
    assert compaction_gaps(compacted, {("t", 0): 16}) == []
    empty = plan_windows([_offsets(0, "compact", end=0)], {})
    assert compaction_gaps(empty, {}) == []


def test_the_detail_stops_after_a_few_partitions() -> None:
    n = MAX_PARTITIONS_IN_DETAIL + 2
    windows = plan_windows([_offsets(p, "compact") for p in range(n)], {})
    rows = compaction_gaps(windows, {})
    assert len(rows) == n and len({r[5] for r in rows}) == 1
    assert rows[0][5].count("partition ") == MAX_PARTITIONS_IN_DETAIL
    assert rows[0][5].endswith("and 2 more partitions)")


def test_partition_ends_carry_the_last_stable_offset() -> None:
    """A pending record below it was read committed: what ``committed_seen`` is made of."""
    [w] = plan_windows([_offsets(0, "compact")], {})
    assert partition_ends([w]) == [(0, 14, 0, 16)]
