"""The local engine's verdicts (DuckDB) on the named scenarios of ``fixtures.scenarios``.

The local engine must give the hand-computed rows. That every column of every row, and every
ledger entry, equals what the Spark engine gives is held in the integration tier
(``tests/integration/test_engine_parity.py``): it needs a JVM.
"""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.engines import duckdb_reconcile
from fixtures.relations import (
    ARROW_LEDGER,
    ARROW_SINK,
    ARROW_WINDOW,
    arrow_table,
    judge,
    rows,
)
from fixtures.scenarios import LEDGER_NO_POSITIONS, SCENARIOS, T

from recon.model import schemas
from recon.model.verdicts import ALL_VERDICTS

pytestmark = pytest.mark.unit


def as_tuple(row: dict[str, Any]) -> tuple:
    return (row["verdict"], row["message_id"], row["partition"], tuple(row["offsets"]),
            row["sink_count"], tuple(row["sink_keys"]), row["topic_duplicate"])  # fmt: skip


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_gives_the_hand_computed_rows(name: str) -> None:
    s = SCENARIOS[name]()
    con, results = judge(s)
    assert {as_tuple(r) for r in rows(con, results)} == s.expected


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
