"""P3's own run in the bench report (``bench.figures.p3``, ``bench.report``): the Spark engine's
run at the scaled window gets its row and its driver's memory beside P1's, and a results file
from before it ran (local engine only) still reports."""

from __future__ import annotations

from typing import Any

import pytest

from bench import figures, summary

pytestmark = pytest.mark.unit


def _measured(seconds: float, rss: float, jvm: float = 0.0, python: float = 300.0) -> dict:
    return {"seconds": seconds, "peak_rss_mb": rss, "peak_jvm_mb": jvm,
            "peak_python_mb": python, "peak_watched_mb": 0.0, "output": {}}  # fmt: skip


def _results(with_spark: bool) -> dict[str, Any]:
    p1 = [
        {"size": n, "label": label, "expected": {},
         "runs": {"local": [_measured(1.0, rss)], "product": [_measured(9.0, jvm + 400, jvm)]}}
        for n, label, rss, jvm in ((1_000_000, "1M", 700.0, 1057.0),
                                   (10_000_000, "10M", 1400.0, 1270.0))
    ]  # fmt: skip
    p3: dict[str, Any] = {
        "size": 30_000_000,
        "label": "30M",
        "local": {**_measured(55.1, 1457.0), "peak_spill_mb": 3579.0},
    }
    if with_spark:
        p3["product"] = _measured(189.2, 2100.0, jvm=1456.0, python=921.0)
    return {"p1": p1, "p3": p3}


def test_the_spark_engines_scaled_run_has_its_row_and_its_driver_beside_p1s() -> None:
    results = _results(with_spark=True)
    lines = figures.p3(results)
    assert "| 30M (P3's own run) | Spark engine | 921.0 MB | 1,456.0 MB | 2,100.0 MB |" in lines
    assert "| 30M (P3's own run) | local engine | 300.0 MB | none | 1,457.0 MB |" in lines
    assert lines[-1].endswith("The Spark engine, in a JVM of its own: 189.2 s.")
    driver = summary._spark_driver(results)
    assert "1,057.0 MB at 1M, 1,270.0 MB at 10M, 1,456.0 MB at 30M (P3's own run)" in driver


def test_a_results_file_without_the_spark_run_still_reports() -> None:
    results = _results(with_spark=False)
    lines = figures.p3(results)
    assert not [line for line in lines if "| 30M (P3's own run) | Spark engine" in line]
    assert "Spark engine, in a JVM of its own" not in lines[-1]
    assert "1,270.0 MB at 10M (target: flat" in summary._spark_driver(results)
