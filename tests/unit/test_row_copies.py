"""Step 2's copies out of PostgreSQL (``recon.read.row_copies``), shared by both engines: they
run beside the window's read, a copy's failure reaches the caller, and a failure of the window's
read is the one reported when both fail. The copies here are plain functions: what each copies
is tested with the real database in tests/integration (test_payload_sink, test_engine_vs_workload).
"""

from __future__ import annotations

import threading

import pytest

from recon.read.row_copies import RowCopies

pytestmark = pytest.mark.unit


def test_copies_run_side_by_side_with_the_caller() -> None:
    both_started = threading.Barrier(3, timeout=10)

    def copy(n: int) -> int:
        both_started.wait()  # fails unless both copies and the caller run at once
        return n

    copies = RowCopies({"sink": lambda: copy(7), "source": lambda: copy(3)}).start()
    both_started.wait()
    assert copies.wait() == {"sink": 7, "source": 3}
    assert set(copies.took) == {"sink", "source"}
    assert all(t >= 0 for t in copies.took.values())


def test_a_failed_copy_is_raised_by_wait_after_every_copy_ended() -> None:
    ended: list[str] = []

    def fail() -> int:
        raise OSError("connection refused")

    def slow() -> int:
        threading.Event().wait(0.2)
        ended.append("source")
        return 1

    copies = RowCopies({"sink": fail, "source": slow}).start()
    with pytest.raises(OSError, match="connection refused"):
        copies.wait()
    assert ended == ["source"]
    assert "sink" not in copies.took


def test_join_after_the_windows_failure_neither_raises_nor_waits_for_copies_never_started() -> None:
    def fail() -> int:
        raise OSError("copy failed too")

    started = RowCopies({"sink": fail}).start()
    started.join()  # the caller re-raises its own failure after this
    RowCopies({"sink": fail}).join()  # the window failed before the copies started


def test_no_copies() -> None:
    assert RowCopies({}).start().wait() == {}
