"""The workload's fault proxy takes turns on its one port: a second proxy waits for the first."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from fixtures.alerts import free_port

from recon_workload.proxy import DropPolicy, FaultProxy

pytestmark = pytest.mark.unit


def test_a_second_proxy_on_the_port_waits_for_the_first(tmp_path: Path) -> None:
    port, lock = free_port(), str(tmp_path / "proxy.lock")
    first = FaultProxy(port, 1, DropPolicy(), lock_path=lock)
    second = FaultProxy(port, 1, DropPolicy(), lock_path=lock)
    outcome: list[BaseException | str] = []

    def start_second() -> None:
        try:
            second.start()
            outcome.append("listening")
        except BaseException as exc:  # 'Address already in use' without the lock
            outcome.append(exc)

    with first:
        thread = threading.Thread(target=start_second, daemon=True)
        thread.start()
        time.sleep(0.5)
        assert outcome == [], "the second proxy did not wait for the first"
    thread.join(10)
    assert outcome == ["listening"]
    second.stop()
    # Both released the lock: a third one starts at once.
    with FaultProxy(port, 1, DropPolicy(), lock_path=lock):
        pass
