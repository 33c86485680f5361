"""The one driver of step 3 (``recon.engines.driver.judge_run``) on DuckDB, over tiny relations
handed out by a fake IO and a plan built by hand (``fixtures.run_driver``): the steps around the
verdict steps (the read_uncommitted pass, a sink scanned whole, the discrepancy rows and samples).
The same scenario on Spark is compared in ``tests/integration/test_run_driver_on_spark.py``."""

from __future__ import annotations

import pytest
from fixtures import run_driver
from fixtures.run_driver import Inputs, run, window

pytestmark = pytest.mark.unit


@pytest.fixture
def aborted_in_a_gap() -> Inputs:
    return run_driver.aborted_in_a_gap()


def test_a_phantom_in_an_offset_gap_is_an_aborted_read(aborted_in_a_gap: Inputs) -> None:
    judged, io, rows = run("duckdb", None, aborted_in_a_gap)
    assert io.read_uncommitted == [[0]], "only the partition with a gap is read again"
    assert judged.counts["aborted_read"] == 1
    assert judged.counts["phantom"] == 0
    assert judged.counts["delivered"] == 3
    assert rows == {("aborted_read", "m2", (1,), 1, False)}
    assert [s["message_id"] for s in judged.samples["aborted_read"]] == ["m2"]
    assert judged.sink_rows_scanned == 4
    assert io.wrote == [False]


def test_no_gap_no_read_uncommitted_pass(aborted_in_a_gap: Inputs) -> None:
    # m2's record is committed after all: the sink row has its record, nothing is read again.
    aborted_in_a_gap.committed.append(("t", 0, 1, "m2", None))
    judged, io, rows = run("duckdb", None, aborted_in_a_gap)
    assert io.read_uncommitted == []
    assert judged.counts["delivered"] == 4
    assert rows == set()
    assert judged.samples == {}


def test_a_phantom_without_a_gap_stays_a_phantom() -> None:
    # m9 has a sink row and no record; every offset of the window is a committed record, so no
    # aborted record can carry it: no read_uncommitted pass, and the counts are the written
    # results' (counted once, after the write).
    inputs = Inputs(
        windows=[window(0, 0, 2)],
        committed=[("t", 0, 0, "m1", None), ("t", 0, 1, "m2", None)],
        sink=[("k1", "m1"), ("k9", "m9")],
    )
    judged, io, rows = run("duckdb", None, inputs)
    assert io.read_uncommitted == []
    counts = judged.counts
    assert (counts["phantom"], counts["lost"], counts["delivered"]) == (1, 1, 1)
    assert rows == {("phantom", "m9", (), 1, False), ("lost", "m2", (1,), 0, False)}


@pytest.fixture
def whole_sink_one_changed() -> Inputs:
    """A sink scanned whole: m1 and m2 were delivered once each by an earlier run; m2 now has a
    second row, m1 has not changed, and no new record was read."""
    return Inputs(
        windows=[window(0, 2, 2)],
        sink=[("k1", "m1"), ("k2", "m2"), ("k2b", "m2")],
        ledger=[("m1", "t", 0, 0, [0], 1, "r0", "delivered"),
                ("m2", "t", 0, 1, [1], 1, "r0", "delivered")],
        ingest_seq=False,
    )  # fmt: skip


def test_whole_sink_judges_only_the_messages_whose_rows_changed(
    whole_sink_one_changed: Inputs,
) -> None:
    judged, io, rows = run("duckdb", None, whole_sink_one_changed)
    assert rows == {("duplicated", "m2", (1,), 2, False)}
    assert judged.counts["duplicated"] == 1
    assert judged.counts["delivered"] == 0, "m1's row count did not change: no verdict"
    assert judged.sink_rows_scanned == 2, "only m2's rows are passed again"
    assert io.wrote == [True]


def test_samples_follow_partition_then_offset() -> None:
    # 13 messages lost per partition, read in no order; the samples keep 20.
    offsets = (7, 3, 12, 2, 1, 0, 4, 5, 11, 10, 6, 9, 8)
    lost = [("t", p, o, f"m{p}-{o:02}", None) for p in (1, 0) for o in offsets]
    inputs = Inputs(windows=[window(0, 0, 13), window(1, 0, 13)], committed=lost)
    judged, _, _ = run("duckdb", None, inputs)
    assert judged.counts["lost"] == 26
    expected = [f"m0-{o:02}" for o in range(13)] + [f"m1-{o:02}" for o in range(7)]
    assert [s["message_id"] for s in judged.samples["lost"]] == expected
