"""The rules over a Kafka sink (issue 73, item 1): its records are the sink rows, keyed by their
target coordinates; when the target's retention removed records no run read
(``target_removed``), a record without a copy is ``unverifiable`` instead of ``lost``, on the
fast path (one record) and the general one (a record at two positions) alike. Judged by the
local engine's DuckDB; the rules are the same SQL on Spark (its parity tests)."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.relations import ARROW_SINK, ARROW_WINDOW, arrow_table, rows
from fixtures.scenarios import rec, sink

from recon.engines.duckdb import DuckDBRules
from recon.rules.run import judge_inputs

pytestmark = pytest.mark.unit

REMOVED = "the sink topic's retention removed offsets 0-1 of partition 1 before any run read them"


def _results(target_removed: str | None) -> dict[str, dict[str, Any]]:
    import duckdb

    con = duckdb.connect()
    window = [rec(0, "m1"), rec(1, "m2"), rec(2, "m3"), rec(3, "m4"), rec(4, "m4")]
    copies = [
        sink("replica:0:7", "m1"),
        sink("replica:0:8", "m3"),
        sink("replica:0:9", "m3"),
    ]
    con.register("w", arrow_table(window, ARROW_WINDOW))
    con.register("s", arrow_table(copies, ARROW_SINK))
    rules = DuckDBRules(con)
    inputs = {"records": "w", "sink_rows": "s"}
    judge_inputs(rules, inputs, None, None, target_removed=target_removed)
    return {r["message_id"]: r for r in rows(con, "results")}


def test_without_a_copy_a_record_is_unverifiable_once_the_target_lost_records() -> None:
    found = _results(REMOVED)
    assert {m: r["verdict"] for m, r in found.items()} == {
        "m1": "delivered", "m2": "unverifiable", "m3": "duplicated", "m4": "unverifiable",
    }  # fmt: skip
    assert REMOVED in found["m2"]["detail"] and REMOVED in found["m4"]["detail"]
    # Each copy of a duplicated message named by where it is in the target.
    assert sorted(found["m3"]["sink_keys"]) == ["replica:0:8", "replica:0:9"]


def test_without_retention_a_record_without_a_copy_is_lost() -> None:
    found = _results(None)
    assert {m: r["verdict"] for m, r in found.items()} == {
        "m1": "delivered", "m2": "lost", "m3": "duplicated", "m4": "lost",
    }  # fmt: skip
