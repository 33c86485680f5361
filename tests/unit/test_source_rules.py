"""Three-way reconciliation (issue 20) judged by DuckDB alone: a pipeline without a source has no
``unpublished``. The tests on both engines are in
``tests/integration/test_source_rules_on_spark.py`` (the Spark half needs a JVM)."""

from __future__ import annotations

import pytest
from fixtures.relations import ARROW_SINK, ARROW_WINDOW, arrow_table
from fixtures.scenarios import rec

pytestmark = pytest.mark.unit


def test_without_a_source_nothing_is_unpublished() -> None:
    import duckdb

    from recon.engines.duckdb import reconcile

    con = duckdb.connect()
    con.register("w", arrow_table([rec(0, "m1")], ARROW_WINDOW))
    con.register("s", arrow_table([], ARROW_SINK))
    _, counts = reconcile(con, window="w", sink_rows="s")
    assert (counts["lost"], counts["unpublished"]) == (1, 0)
