"""The verified extent read from the results store (``recon.store.verified.read_extent``): a
run's offset snapshot and its pending rows, as a run commits them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from recon.store import RunNotFound
from recon.store.verified import read_extent

pytestmark = pytest.mark.integration

SNAP = datetime(2026, 12, 6, 8, 0, 0, tzinfo=UTC)


def test_extent_of_a_stored_run(results_pg: Any, pipeline: str) -> None:
    with results_pg.cursor() as cur:
        for partition, window_to, hw in ((0, 10, 10), (1, 20, 25)):
            cur.execute(
                "INSERT INTO recon.offset_snapshots (pipeline, run_id, topic, partition, "
                "log_start_offset, last_stable_offset, high_watermark, committed_offset, "
                "settled_offset, window_from, window_to, snapshot_at) "
                "VALUES (%s, 'r1', 't', %s, 0, %s, %s, %s, %s, 0, %s, %s)",
                (pipeline, partition, hw, hw, window_to, window_to if partition else None,
                 window_to, SNAP),
            )  # fmt: skip
        # partition 1: pending at 22 and 23 (past the window's end), and one in another run
        for run_id, first in (("r1", 23), ("r1", 22), ("r0", 3)):
            cur.execute(
                "INSERT INTO recon.discrepancies (pipeline, run_id, verdict, message_id, topic, "
                "partition, offsets, first_offset) VALUES (%s, %s, 'pending', %s, 't', 1, %s, %s)",
                (pipeline, run_id, f"m{first}", [first], first),
            )
    results_pg.commit()
    got = read_extent(results_pg, pipeline, "r1", settle_seconds=30)
    assert [(p.partition, p.verified_to) for p in got.partitions] == [(0, 10), (1, 20)]
    horizon = SNAP - timedelta(seconds=30, milliseconds=1)
    assert got.partitions[0].watermark == SNAP - timedelta(milliseconds=1)
    assert got.partitions[1].watermark == horizon and got.watermark == horizon
    with pytest.raises(RunNotFound, match="run 'nope' has no offset snapshot"):
        read_extent(results_pg, pipeline, "nope", settle_seconds=30)
