"""Delivery latency and ``late`` (issue 19) on tiny relations, judged by DuckDB: each message's
latency, the ``late`` row's words, and the times the next ledger keeps. The Spark engine's rows of
these named scenarios are held to DuckDB's by ``tests/integration/test_engine_parity.py``; the
tests on relations of their own, on both engines, are in
``tests/integration/test_latency_rules_on_spark.py`` (they need a JVM)."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.engines import duckdb_ledger
from fixtures.latency_scenarios import LATENCIES, TS_MS
from fixtures.relations import judge, named_rows, rows
from fixtures.scenarios import SCENARIOS

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", list(LATENCIES))
def test_each_message_gets_its_latency(name: str) -> None:
    found = named_rows("duckdb", None, name)
    latencies = {r["message_id"]: r["latency_ms"] for r in found if r["latency_ms"] is not None}
    assert latencies == LATENCIES[name]


def test_a_late_row_says_by_how_much() -> None:
    found = named_rows("duckdb", None, "late_and_on_time")
    late = [r for r in found if r["verdict"] == "late"]
    assert [r["detail"] for r in late] == [
        "delivered 2500 ms after its record's Kafka timestamp; the bound is 2000 ms"
    ]


def test_a_late_row_after_a_lost_verdict_says_both() -> None:
    found = named_rows("duckdb", None, "late_after_lost")
    (late,) = [r for r in found if r["verdict"] == "late"]
    parts = late["detail"].split("; ")
    assert "sink row arrived after the message was judged lost (first seen in run run-1)" in parts
    assert (
        "delivered 5000 ms after its record's Kafka timestamp; the bound is 2000 ms"
        in (late["detail"])
    )


def test_a_pending_message_keeps_its_first_sink_row_time() -> None:
    found = named_rows("duckdb", None, "late_after_pending")
    kept = {r["message_id"]: r["sink_time_ms"] for r in found if r["sink_time_ms"] is not None}
    assert kept == {"m5": TS_MS + 700}


def _next_ledger(name: str) -> dict[str, tuple[Any, ...]]:
    """Scenario ``name``'s next ledger: (verdict, record_time_ms, sink_time_ms) by messageId."""
    con, _ = judge(SCENARIOS[name]())
    entries = rows(con, duckdb_ledger(con, "run-2"))
    return {
        e["message_id"]: (e["verdict"], e["record_time_ms"], e["sink_time_ms"]) for e in entries
    }


def test_the_next_ledger_keeps_the_times_a_later_run_measures_from() -> None:
    # late_and_on_time's m4 has no sink row: lost, its entry keeps the record's time.
    assert _next_ledger("late_and_on_time") == {
        "m1": ("delivered", None, None),
        "m2": ("late", None, None),
        "m3": ("delivered", None, None),
        "m4": ("lost", TS_MS, None),
    }
    # late_after_pending's m5 is pending with a sink row: its entry keeps the row's time; the
    # others are judged now and keep neither.
    assert _next_ledger("late_after_pending") == {
        "m1": ("late", None, None),
        "m2": ("delivered", None, None),
        "m3": ("duplicated", None, None),
        "m4": ("delivered", None, None),
        "m5": ("pending", None, TS_MS + 700),
    }


def test_no_time_column_no_latency() -> None:
    found = named_rows("duckdb", None, "all_delivered")
    assert {r["verdict"] for r in found} == {"delivered"}
    assert all(r["latency_ms"] is None for r in found)
