"""The bench's memory sampler (``bench.measure``): a process's PSS is read from the kernel when
first seen and again only once its RSS moved or time passed, and the peak it reports still
follows the process's growth. Real processes: this test's own, and a child that grows.
"""

from __future__ import annotations

import sys

import psutil
import pytest

from bench import measure

pytestmark = pytest.mark.unit


def test_a_process_is_read_once_while_its_memory_stays_put() -> None:
    sampler = measure.PssSampler()
    me = psutil.Process()
    first = sampler.pss_bytes(me)
    again = [sampler.pss_bytes(me) for _ in range(20)]
    assert sampler.reads == 1
    assert first > 0
    # Between reads: RSS times the last read's ratio, so within the re-read bound of the truth.
    truth = measure._pss_bytes(me)
    assert abs(again[-1] - truth) <= 2 * measure.REREAD_CHANGE * truth + 4 * 2**20


def test_a_process_is_read_again_when_its_memory_grows_or_time_passes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sampler = measure.PssSampler()
    me = psutil.Process()
    sampler.pss_bytes(me)
    grown = bytearray(int(me.memory_info().rss * 0.5) + 64 * 2**20)
    grown[::4096] = b"x" * len(grown[::4096])  # touch every page: resident now
    after = sampler.pss_bytes(me)
    assert sampler.reads == 2
    assert after >= len(grown)
    monkeypatch.setattr(measure, "REREAD_SECONDS", 0.0)
    sampler.pss_bytes(me)
    assert sampler.reads == 3
    del grown


def test_run_reports_the_peak_of_a_child_that_grows_then_shrinks() -> None:
    code = (
        "import time, json\n"
        "b = bytearray(300 * 2**20); b[::4096] = b'x' * len(b[::4096]); time.sleep(1.0)\n"
        "del b; time.sleep(0.5); print(json.dumps({'ok': 1}))\n"
    )
    measured = measure.run([sys.executable, "-c", code])
    assert measured.output == {"ok": 1}
    assert measured.peak_python_mb >= 300
    assert measured.peak_jvm_mb == 0
