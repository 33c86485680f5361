"""Window planning per partition: hand-computed from named snapshots."""

from __future__ import annotations

import pytest

from recon.snapshot.window import PartitionOffsets, Watermark, plan_windows, rewinds

pytestmark = pytest.mark.unit


def offsets(
    p: int = 0,
    *,
    start: int = 0,
    lso: int = 100,
    hw: int | None = None,
    committed: int | None = 100,
    settled: int | None = None,
) -> PartitionOffsets:
    return PartitionOffsets("t", p, start, lso, hw if hw is not None else lso, committed, settled)


def test_first_run_starts_at_log_start_and_ends_at_committed() -> None:
    (w,) = plan_windows([offsets(start=5, committed=80)], {})
    assert (w.window_from, w.window_to, w.read_from) == (5, 80, 5)
    assert not w.unverifiable and not w.rewound and not w.new_partition


def test_next_run_starts_at_watermark() -> None:
    (w,) = plan_windows([offsets(committed=90)], {("t", 0): Watermark(80, 80)})
    assert (w.window_from, w.window_to) == (80, 90)


def test_open_transaction_clamps_to_last_stable_offset() -> None:
    (w,) = plan_windows([offsets(lso=60, hw=70, committed=70)], {})
    assert w.window_to == 60 and w.pending_to == 60


def test_settle_time_ends_window_before_young_records() -> None:
    (w,) = plan_windows([offsets(committed=100, settled=75)], {})
    assert (w.window_to, w.pending_to) == (75, 100)


def test_nothing_committed_means_empty_window_all_pending() -> None:
    (w,) = plan_windows([offsets(committed=None)], {})
    assert (w.window_from, w.window_to, w.pending_to) == (0, 0, 100)


def test_rewind_is_recorded_and_window_never_goes_back() -> None:
    (w,) = plan_windows([offsets(committed=40)], {("t", 0): Watermark(90, 90)})
    assert w.rewound and w.previous_committed == 90
    assert (w.window_from, w.window_to) == (90, 90)


def test_watermark_below_log_start_is_unverifiable() -> None:
    (w,) = plan_windows([offsets(start=50, committed=100)], {("t", 0): Watermark(20, 20)})
    assert w.unverifiable and w.read_from == 50 and w.window_from == 20
    assert w.removed_to == 50


def test_removed_offsets_past_the_committed_offset_wait_for_their_window() -> None:
    # Retention removed [20, 27) while the consumer had committed only 25: this window reports
    # [20, 25); 25 and 26 were pending and are reported by the window that reaches them.
    (w,) = plan_windows([offsets(start=27, committed=25)], {("t", 0): Watermark(20, 20)})
    assert (w.window_from, w.window_to, w.read_from, w.removed_to) == (20, 25, 27, 25)
    assert w.unverifiable
    # The consumer stuck at 25: nothing of an empty window was removed, so nothing to report.
    (stuck,) = plan_windows([offsets(start=27, committed=25)], {("t", 0): Watermark(25, 25)})
    assert (stuck.window_from, stuck.window_to) == (25, 25) and not stuck.unverifiable
    # It moves past the gap: the window [25, 30) reports the removed 25 and 26.
    (moved,) = plan_windows([offsets(start=27, committed=30)], {("t", 0): Watermark(25, 25)})
    assert (moved.window_from, moved.removed_to, moved.read_from) == (25, 27, 27)


def test_partition_added_after_first_run_is_new() -> None:
    windows = plan_windows([offsets(0), offsets(1, committed=10)], {("t", 0): Watermark(50, 50)})
    assert [w.new_partition for w in windows] == [False, True]
    assert (windows[1].window_from, windows[1].window_to) == (0, 10)


def test_configured_start_offsets_apply_to_first_run_only() -> None:
    (w,) = plan_windows([offsets(committed=100)], {}, {0: 30})
    assert w.window_from == 30


def test_rewinds_lists_only_partitions_that_went_back() -> None:
    windows = plan_windows(
        [offsets(0, committed=40), offsets(1, committed=95)],
        {("t", 0): Watermark(90, 90), ("t", 1): Watermark(90, 90)},
    )
    assert rewinds(windows) == [{"partition": 0, "from": 90, "to": 40}]


def test_a_runs_fact_bound_counts_its_windows_and_sink_range() -> None:
    """Hand-computed: partition 0 reads [5, 100) (committed to 80, pending to the LSO 100),
    partition 1 reads [0, 40); the sink range (1000, 1200] adds 200 rows."""
    from datetime import UTC, datetime

    from recon.store import RunRecord

    windows = plan_windows(
        [offsets(0, start=5, committed=80), offsets(1, lso=40, committed=40)], {}
    )
    record = RunRecord("p", "r", "running", datetime(2026, 1, 1, tzinfo=UTC), windows,
                       None, None, 1000, 1200)  # fmt: skip
    assert record.fact_bound == 95 + 40 + 200
    empty_sink = RunRecord("p", "r", "running", record.snapshot_at, windows, None, None, None, None)
    assert empty_sink.fact_bound == 135
