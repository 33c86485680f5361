"""The local engine's verdicts (DuckDB) on the named scenarios of ``fixtures.scenarios``.

Every scenario is judged by both engines: the local one must give the hand-computed rows, and
every column of every row (detail words, positions, keys) must equal what the Spark engine
gives; so must the ledger entries each engine writes from its results.
"""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.engines import duckdb_ledger, duckdb_reconcile
from fixtures.relations import (
    ARROW_LEDGER,
    ARROW_SINK,
    ARROW_WINDOW,
    arrow_table,
    judge,
    plain,
    row_key,
    rows,
)
from fixtures.scenarios import LEDGER_NO_POSITIONS, SCENARIOS, T
from fixtures.spark_batches import SparkJudged

from recon import schemas
from recon.verdicts import ALL_VERDICTS

pytestmark = pytest.mark.unit


def as_tuple(row: dict[str, Any]) -> tuple:
    return (row["verdict"], row["message_id"], row["partition"], tuple(row["offsets"]),
            row["sink_count"], tuple(row["sink_keys"]), row["topic_duplicate"])  # fmt: skip


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_gives_the_hand_computed_rows(name: str) -> None:
    s = SCENARIOS[name]()
    con, results = judge(s)
    assert {as_tuple(r) for r in rows(con, results)} == s.expected


# Last scenario first: tests/unit/test_reconcile.py asks for the Spark groups first to last, so
# two workers judge different groups and each reads the other's back (``spark_judged``).
@pytest.mark.parametrize("name", list(reversed(SCENARIOS)))
def test_every_column_equals_the_spark_engine(spark_judged: SparkJudged, name: str) -> None:
    con, results = judge(SCENARIOS[name]())
    local = sorted((plain(r) for r in rows(con, results)), key=row_key)
    assert local == sorted(spark_judged.results(name), key=row_key)


@pytest.mark.parametrize("name", list(reversed(SCENARIOS)))
def test_ledger_entries_equal_the_spark_engine(spark_judged: SparkJudged, name: str) -> None:
    con, _ = judge(SCENARIOS[name]())
    local = sorted((plain(r) for r in rows(con, duckdb_ledger(con, "run-2"))), key=row_key)
    assert local == sorted(spark_judged.ledger(name), key=row_key)


def test_counts_name_every_verdict() -> None:
    import duckdb

    s = SCENARIOS["topic_duplicate"]()
    con = duckdb.connect()
    con.register("w", arrow_table(s.window, ARROW_WINDOW))
    con.register("s", arrow_table(s.sinks, ARROW_SINK))
    results, counts = duckdb_reconcile(con, window="w", sink_rows="s")
    assert set(counts) == set(ALL_VERDICTS)
    assert counts["topic_duplicate"] == sum(1 for r in rows(con, results) if r["topic_duplicate"])


def test_a_ledger_without_positions_is_accepted_and_its_positions_derived() -> None:
    # The scenarios' ledgers lack the column the product's ledger has, so that every scenario
    # with a ledger goes through the derivation; the derived positions are the entry's offsets.
    assert "positions" in schemas.LEDGER.fieldNames()
    assert "positions" not in LEDGER_NO_POSITIONS and "positions" not in ARROW_LEDGER.names
    # m1 is in no record of this window: where its row says it sits comes from its ledger
    # entry's derived positions alone. At one position, the row stores no list of them.
    con, results = judge(SCENARIOS["duplicate_in_later_run"]())
    (m1,) = [r for r in rows(con, results) if r["message_id"] == "m1"]
    where = (m1["topic"], m1["partition"], m1["offsets"], m1["first_offset"])
    assert where == (T, 0, [0], 0) and m1["positions"] is None
