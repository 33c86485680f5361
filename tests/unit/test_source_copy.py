"""Both engines read a run's source rows in step 2, beside the window: step 3 reuses them
only when they were read for the run's own source times (a window read before the pipeline
declared its source, or for other times, is read again)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from recon.read.source import SourceTimes
from recon.read.source_copy import TIMES_FILE, copied_for, times_json

pytestmark = pytest.mark.unit

SNAPSHOT = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
TIMES = SourceTimes(SNAPSHOT - timedelta(hours=168), SNAPSHOT, None, SNAPSHOT - timedelta(1))


def test_rows_read_for_the_same_times_are_reused(tmp_path: Path) -> None:
    (tmp_path / TIMES_FILE).write_text(json.dumps(times_json(TIMES)))
    assert copied_for(str(tmp_path), TIMES)


def test_rows_read_for_other_times_are_read_again(tmp_path: Path) -> None:
    (tmp_path / TIMES_FILE).write_text(json.dumps(times_json(TIMES)))
    later = SourceTimes(TIMES.read_from, TIMES.snapshot_at, TIMES.settled_to, TIMES.settled_to)
    assert not copied_for(str(tmp_path), later)


def test_a_window_without_source_rows_reads_them(tmp_path: Path) -> None:
    assert not copied_for(str(tmp_path), TIMES)
    assert not copied_for(str(tmp_path / "absent"), TIMES)
