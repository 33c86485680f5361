"""Delivery latency and ``late`` (issue 19) on tiny relations, on both engines: each message's
latency, the ``late`` row's words, and the percentiles of ``07_latency_stats`` against values
computed by hand (nearest rank)."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.engines import duckdb_ledger
from fixtures.latency_scenarios import LATENCIES, TS_MS
from fixtures.relations import ENGINES, judge, judged, named_rows, rows
from fixtures.scenarios import SCENARIOS, Scenario, rec, sink

from recon.rules.run import latency_stats, untimed

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", list(LATENCIES))
def test_each_message_gets_its_latency(spark_judged: Any, engine: str, name: str) -> None:
    found = named_rows(engine, spark_judged, name)
    latencies = {r["message_id"]: r["latency_ms"] for r in found if r["latency_ms"] is not None}
    assert latencies == LATENCIES[name]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_late_row_says_by_how_much(spark_judged: Any, engine: str) -> None:
    found = named_rows(engine, spark_judged, "late_and_on_time")
    late = [r for r in found if r["verdict"] == "late"]
    assert [r["detail"] for r in late] == [
        "delivered 2500 ms after its record's Kafka timestamp; the bound is 2000 ms"
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_late_row_after_a_lost_verdict_says_both(spark_judged: Any, engine: str) -> None:
    found = named_rows(engine, spark_judged, "late_after_lost")
    (late,) = [r for r in found if r["verdict"] == "late"]
    parts = late["detail"].split("; ")
    assert "sink row arrived after the message was judged lost (first seen in run run-1)" in parts
    assert (
        "delivered 5000 ms after its record's Kafka timestamp; the bound is 2000 ms"
        in (late["detail"])
    )


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


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pending_message_keeps_its_first_sink_row_time(spark_judged: Any, engine: str) -> None:
    found = named_rows(engine, spark_judged, "late_after_pending")
    kept = {r["message_id"]: r["sink_time_ms"] for r in found if r["sink_time_ms"] is not None}
    assert kept == {"m5": TS_MS + 700}


def _next_ledger(engine: str, spark_judged: Any, name: str) -> dict[str, tuple[Any, ...]]:
    """Scenario ``name``'s next ledger: (verdict, record_time_ms, sink_time_ms) by messageId."""
    if engine == "spark":
        entries = spark_judged.ledger(name)
    else:
        con, _ = judge(SCENARIOS[name]())
        entries = rows(con, duckdb_ledger(con, "run-2"))
    return {
        e["message_id"]: (e["verdict"], e["record_time_ms"], e["sink_time_ms"]) for e in entries
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_the_next_ledger_keeps_the_times_a_later_run_measures_from(
    spark_judged: Any, engine: str
) -> None:
    # late_and_on_time's m4 has no sink row: lost, its entry keeps the record's time.
    assert _next_ledger(engine, spark_judged, "late_and_on_time") == {
        "m1": ("delivered", None, None),
        "m2": ("late", None, None),
        "m3": ("delivered", None, None),
        "m4": ("lost", TS_MS, None),
    }
    # late_after_pending's m5 is pending with a sink row: its entry keeps the row's time; the
    # others are judged now and keep neither.
    assert _next_ledger(engine, spark_judged, "late_after_pending") == {
        "m1": ("late", None, None),
        "m2": ("delivered", None, None),
        "m3": ("duplicated", None, None),
        "m4": ("delivered", None, None),
        "m5": ("pending", None, TS_MS + 700),
    }


@pytest.mark.parametrize("engine", ENGINES)
def test_no_time_column_no_latency(spark_judged: Any, engine: str) -> None:
    found = named_rows(engine, spark_judged, "all_delivered")
    assert {r["verdict"] for r in found} == {"delivered"}
    assert all(r["latency_ms"] is None for r in found)


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
