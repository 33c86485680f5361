"""The verified extent of a run (``recon.store.verified``): per partition the offsets below which
every record has a final verdict, and the event-time watermark, on hand-computed cases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from recon.store.verified import PartitionFacts, extent

pytestmark = pytest.mark.unit

SNAP = datetime(2026, 12, 6, 8, 0, 0, tzinfo=UTC)
MS = timedelta(milliseconds=1)


def _p(partition: int, window_to: int, hw: int, settled: int | None = None,
       pending: int | None = None) -> PartitionFacts:  # fmt: skip
    return PartitionFacts("t", partition, window_to, hw, settled, pending)


def test_caught_up_partitions_are_verified_to_the_snapshot() -> None:
    got = extent("p", "r1", [_p(1, 7, 7), _p(0, 10, 10)], SNAP, settle_seconds=0)
    assert [(e.partition, e.verified_to) for e in got.partitions] == [(0, 10), (1, 7)]
    assert got.watermark == SNAP - MS
    extra = got.as_extra()
    assert extra["watermark"] == "2026-12-06T07:59:59.999+00:00"
    assert extra["partitions"][0] == {
        "topic": "t", "partition": 0, "verified_to": 10, "watermark": extra["watermark"],
    }  # fmt: skip


def test_a_pending_record_below_the_window_end_bounds_the_offsets() -> None:
    # window to 10 but a message left pending at 6: only [.., 6) is final
    got = extent("p", "r1", [_p(0, 10, 12, pending=6)], SNAP, settle_seconds=0)
    assert got.partitions[0].verified_to == 6
    assert got.watermark is None  # 6 records unaccounted older than any known time


def test_the_settle_horizon_gives_the_watermark_when_younger_records_wait() -> None:
    # records from offset 8 are younger than the settle horizon; the window stopped there
    got = extent("p", "r1", [_p(0, 8, 12, settled=8), _p(1, 5, 5)], SNAP, settle_seconds=60)
    assert got.partitions[0].watermark == SNAP - timedelta(seconds=60) - MS
    assert got.partitions[1].watermark == SNAP - MS
    assert got.watermark == SNAP - timedelta(seconds=60) - MS  # the earliest partition's


def test_a_lagging_consumer_leaves_the_watermark_unknown() -> None:
    # committed at 4, records up to 8 are older than the horizon: their time is not known here
    got = extent("p", "r1", [_p(0, 4, 12, settled=8), _p(1, 5, 5)], SNAP, settle_seconds=60)
    assert got.partitions[0].verified_to == 4 and got.partitions[0].watermark is None
    assert got.watermark is None and got.as_extra()["watermark"] is None
    assert extent("p", "r1", [], SNAP, 0).watermark is None
