"""An upsert sink's order and ``out_of_order`` (issue 19) on both engines, Spark's among them, on
tiny relations written here: a pipeline that declares no order, a record without a position. The
named scenarios' rows are held to their words with DuckDB in ``tests/unit/test_order_rules.py``
and Spark's to DuckDB's by ``test_engine_parity.py``. Here, not in the unit tier, because they need
a JVM."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.relations import ENGINES, judged_rows
from fixtures.scenarios import SCENARIOS, Scenario, rec, sink

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("engine", ENGINES)
def test_without_order_a_superseded_record_stays_lost(spark: Any, engine: str) -> None:
    # The rows carry keys and positions, the pipeline declares no order: per message only.
    s = SCENARIOS["stale_overwrite"]()
    s.ordered = False
    verdicts = {r["message_id"]: r["verdict"] for r in judged_rows(engine, spark, s)}
    assert verdicts == {"a1": "delivered", "a2": "lost", "a3": "lost", "b1": "lost",
                        "b2": "delivered", "c1": "lost"}  # fmt: skip


@pytest.mark.parametrize("engine", ENGINES)
def test_a_record_without_a_position_takes_no_part(spark: Any, engine: str) -> None:
    # A version that is no whole number reads as null: the record is judged per message only.
    s = Scenario(
        window=[rec(0, "a1", key="A"), (*rec(1, "a2", key="A")[:-2], None, None)],
        sinks=[sink("A", "a1", upsert=("A", 0))],
        ordered=True,
    )
    verdicts = {r["message_id"]: r["verdict"] for r in judged_rows(engine, spark, s)}
    assert verdicts == {"a1": "delivered", "a2": "lost"}
