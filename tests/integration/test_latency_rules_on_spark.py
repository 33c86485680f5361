"""Delivery latency and ``late`` (issue 19) on both engines, Spark's among them, on tiny relations
written here (the named scenarios' Spark rows are held to DuckDB's by ``test_engine_parity.py``;
``tests/unit/test_latency_rules.py`` judges those with DuckDB): a lost message's kept record time,
the percentiles of ``07_latency_stats`` against values computed by hand (nearest rank), and rows
without a time. Here, not in the unit tier, because they need a JVM."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.latency_scenarios import TS_MS
from fixtures.relations import ENGINES, judged
from fixtures.scenarios import SCENARIOS, Scenario, rec, sink

from recon.rules.readouts import latency_stats, untimed

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("engine", ENGINES)
def test_a_lost_message_keeps_its_record_time(spark: Any, engine: str) -> None:
    # m1 on the fast path (one record), m2 on the general one (a record at two offsets); the
    # delivered m3 and the sink row alone (a phantom) keep none.
    s = Scenario(
        window=[rec(0, "m1"), rec(1, "m2"), rec(2, "m2"), rec(3, "m3")],
        sinks=[sink("k3", "m3", after_ms=10), sink("k9", "ghost", after_ms=10)],
        late_after_ms=1000,
    )
    found, _ = judged(engine, spark, s)
    kept = {r["message_id"]: (r["verdict"], r["record_time_ms"]) for r in found}
    assert kept == {
        "m1": ("lost", TS_MS),
        "m2": ("lost", TS_MS),
        "m3": ("delivered", None),
        "ghost": ("phantom", None),
    }


def percentiles_scenario() -> Scenario:
    """Partition 0: latencies 100, 200, ... 1000 ms; partition 1: -50 and 300 ms."""
    window = [rec(i, f"a{i}") for i in range(10)] + [rec(0, "b0", 1), rec(1, "b1", 1)]
    sinks = [sink(f"k{i}", f"a{i}", after_ms=100 * (i + 1)) for i in range(10)]
    sinks += [sink("kb0", "b0", after_ms=-50), sink("kb1", "b1", after_ms=300)]
    return Scenario(window=window, sinks=sinks, late_after_ms=900)


@pytest.mark.parametrize("engine", ENGINES)
def test_percentiles_per_partition_and_overall(spark: Any, engine: str) -> None:
    _, rules = judged(engine, spark, percentiles_scenario())
    # (partition, messages, negative, min, p50, p95, p99, max); nearest rank: pN is the value
    # at rank ceil(N% of n). Overall, sorted: -50 100 200 300 300 400 500 ... 1000 (n = 12):
    # p50 = 6th = 400, p95 = 12th (11.4 up) = 1000.
    assert latency_stats(rules) == [
        (None, 12, 1, -50, 400, 1000, 1000, 1000),
        (0, 10, 0, 100, 500, 1000, 1000, 1000),
        (1, 2, 1, -50, -50, 300, 300, 300),
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_late_counts_only_over_the_bound(spark: Any, engine: str) -> None:
    found, _ = judged(engine, spark, percentiles_scenario())
    assert sorted(r["message_id"] for r in found if r["verdict"] == "late") == ["a9"]


@pytest.mark.parametrize("engine", ENGINES)
def test_no_latency_no_stats(spark: Any, engine: str) -> None:
    _, rules = judged(engine, spark, SCENARIOS["one_lost"]())
    assert latency_stats(rules) == []


@pytest.mark.parametrize("engine", ENGINES)
def test_rows_without_a_time_are_counted_not_judged(spark: Any, engine: str) -> None:
    s = Scenario(
        window=[rec(0, "m1"), rec(1, "m2")],
        sinks=[sink("k1", "m1", after_ms=40), sink("k2", "m2")],  # k2: a null time column
        late_after_ms=10,
    )
    found, rules = judged(engine, spark, s)
    assert {r["message_id"]: (r["verdict"], r["latency_ms"]) for r in found} == {
        "m1": ("late", 40),
        "m2": ("delivered", None),
    }
    assert [r[:2] for r in latency_stats(rules)] == [(None, 1), (0, 1)]
    assert untimed(rules) == (0, 1)
