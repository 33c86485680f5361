"""The cold part of the ledger read by the Spark engine: the same segments as the local store's,
and a run's ids looked up through their filters, no segment scanned (``recon.ledger``; the local
store's side is ``tests/unit/test_ledger_segments.py``). Here, not in the unit tier, because it
needs a JVM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest
from fixtures import ledger_history
from fixtures.ledger_history import LOCAL, history, layout
from fixtures.ledger_lookups import spark_scans
from fixtures.relations import rows

from recon.engines.duckdb import DuckDBRules
from recon.ledger import versions

pytestmark = pytest.mark.integration


@pytest.fixture
def small_tiers(monkeypatch: pytest.MonkeyPatch) -> None:
    ledger_history.small_tiers(monkeypatch)


def test_the_spark_engine_reads_the_same_segments_and_looks_a_runs_ids_up(
    spark: Any, tmp_path: Path, small_tiers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recon.engines.spark import SparkRules
    from recon.ledger.spark import SparkEntryStore

    con = duckdb.connect()
    history(con, str(tmp_path), 9)  # a level-1 segment and a level-0 one
    entries = LOCAL.read_manifest(str(tmp_path / "run-9.manifest"))
    assert layout(entries) == [(1, 6 * 201), (0, 3 * 201)]
    local = versions.read_newest(DuckDBRules(con), LOCAL, entries)
    want = sorted((r["message_id"], r["first_run_id"]) for r in rows(con, local))
    store = SparkEntryStore(spark)
    assert store.read_manifest(str(tmp_path / "run-9.manifest")) == entries
    found = versions.read_newest(SparkRules(spark), store, entries)
    assert found is not None
    assert sorted((r["message_id"], r["first_run_id"]) for r in found.collect()) == want

    looked_up = spark_scans(monkeypatch)
    ids = spark.createDataFrame([("m-old",), ("m-8",), ("m-none",)], "message_id string")
    found = versions.read_newest(SparkRules(spark), store, entries, ids)
    assert found is not None
    got = sorted((r["message_id"], r["first_run_id"]) for r in found.collect())
    assert got == [("m-8", "run-8"), ("m-old", "run-1")]
    assert looked_up == [[]]  # neither segment scanned
