"""The bench's free-space check (``bench.disk``): a bench that would fill a file system stops
before it writes, naming the file system, what the bytes are for and what to free; one that fits
goes on. Real file systems: this test's temporary folder, its free space read from the kernel.
"""

from __future__ import annotations

import os

import pytest

from bench import disk

pytestmark = pytest.mark.unit


def _free(path: str) -> int:
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def test_a_bench_that_fits_goes_on(tmp_path: os.PathLike[str]) -> None:
    needs = disk.Needs()
    needs.ledger(1_000, str(tmp_path), "a small history")
    disk.require(needs)


def test_a_bench_that_would_fill_the_disk_stops_first_and_says_what_to_free(
    tmp_path: os.PathLike[str],
) -> None:
    needs = disk.Needs()
    entries = _free(str(tmp_path)) // disk.LEDGER_BYTES + 1
    # A folder not made yet counts on the file system of its nearest existing parent.
    needs.ledger(entries, os.path.join(str(tmp_path), "not", "yet"), "P2's simulated history")
    with pytest.raises(SystemExit) as stopped:
        disk.require(needs)
    message = str(stopped.value)
    assert f"P2's simulated history: {entries:,} ledger entries" in message
    assert str(tmp_path) in message
    assert "free" in message
    assert "scripts/clean.sh --orphan-clusters" in message


def test_needs_on_one_file_system_add_up(tmp_path: os.PathLike[str]) -> None:
    """Two folders on one file system: each fits alone, together they do not."""
    # 500 MB past half of what is free beyond the headroom: room for other tests' writes.
    margin = 500 * 2**20 // disk.LEDGER_BYTES
    half = (_free(str(tmp_path)) - disk.HEADROOM) // 2 // disk.LEDGER_BYTES + margin
    for name in ("a", "b"):
        alone = disk.Needs()
        alone.ledger(half, os.path.join(str(tmp_path), name), name)
        disk.require(alone)
    both = disk.Needs()
    both.ledger(half, os.path.join(str(tmp_path), "a"), "a")
    both.ledger(half, os.path.join(str(tmp_path), "b"), "b")
    with pytest.raises(SystemExit):
        disk.require(both)
