"""An upsert sink's order and ``out_of_order`` (issue 19) on tiny relations, judged by DuckDB: the
words of each row (the key and both positions), and the ledger entries the run leaves. Spark's rows
of the named scenarios are held to DuckDB's by ``tests/integration/test_engine_parity.py``; the
tests on relations of their own, on both engines, are in
``tests/integration/test_order_rules_on_spark.py`` (they need a JVM)."""

from __future__ import annotations

import pytest
from fixtures.declarations import doc
from fixtures.order_scenarios import DETAILS
from fixtures.relations import judge, named_rows, rows
from fixtures.scenarios import SCENARIOS, Scenario, rec, sink

from recon.config import parse_pipelines
from recon.engines.duckdb import DuckDBRules
from recon.rules.judging import Judging
from recon.rules.readouts import unordered
from recon.rules.run import next_ledger

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("name", list(DETAILS))
def test_each_row_says_where_its_key_stands(name: str) -> None:
    found = named_rows("duckdb", None, name)
    assert {r["message_id"]: r["detail"] for r in found if r["message_id"] in DETAILS[name]} == (
        DETAILS[name]
    )


def test_records_and_rows_without_a_key_or_position_are_counted() -> None:
    s = Scenario(
        window=[rec(0, "a1", key="A"), rec(1, "a2"), (*rec(2, "a3", key="A")[:-2], None, None)],
        sinks=[sink("A", "a1", upsert=("A", 0)), sink("x", "a2"), sink("y", "a3", upsert=("A", 2))],
        ordered=True,
    )
    con, _ = judge(s)
    # two records without a key or position, one row without one, key A in two rows
    assert unordered(DuckDBRules(con)) == (2, 1, 1)


def test_the_ledger_keeps_the_judged_verdicts() -> None:
    con, _ = judge(SCENARIOS["stale_overwrite"]())
    next_ledger(DuckDBRules(con), "run-2")
    ledger = {r["message_id"]: (r["verdict"], r["sink_count"]) for r in rows(con, "ledger_next")}
    assert ledger == {
        "a1": ("delivered", 1), "a2": ("delivered", 0), "a3": ("out_of_order", 0),
        "b1": ("delivered", 0), "b2": ("delivered", 1), "c1": ("lost", 0),
    }  # fmt: skip


def test_judging_is_ordered_only_when_declared() -> None:
    order = {"key_column": "account", "position_column": "applied_offset"}
    assert Judging.of(parse_pipelines(doc(order=order))["payments"]).ordered
    assert not Judging.of(parse_pipelines(doc())["payments"]).ordered
