"""Ledger versions the local engine writes, read back by the Spark engine: for every named scenario
with a ledger, the version must equal the old entries updated by ``ledger_update``, and entries
written from results derive the positions the results did not store
(``tests/unit/test_local_ledger.py`` holds the same with DuckDB). Here, not in the unit tier,
because they need a JVM."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fixtures.ledger_versions import LOCAL, WITH_LEDGER, versions_of, write_local
from fixtures.relations import judge, plain, row_key, rows
from fixtures.scenarios import SCENARIOS, T

from recon.engines.spark import SparkRules
from recon.ledger import versions
from recon.ledger.spark import SparkEntryStore

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("name", WITH_LEDGER)
def test_the_spark_engine_reads_the_same_version(spark: Any, tmp_path: Path, name: str) -> None:
    _, manifest, expected = versions_of(tmp_path, name)
    store = SparkEntryStore(spark)
    merged = versions.read_newest(SparkRules(spark), store, store.read_manifest(manifest))
    assert merged is not None
    got = sorted((plain(r) for r in merged.collect()), key=row_key)
    assert got == expected


def test_entries_written_from_results_derive_their_positions(spark: Any, tmp_path: Path) -> None:
    # topic_duplicate's results store positions for m1 (twice in partition 0) and m3 (partitions
    # 0 and 1) only; read back as entries, m2 has its position too.
    con, results = judge(SCENARIOS["topic_duplicate"]())
    pos = [{"topic": T, "partition": p, "offset": o} for p, o in ((0, 0), (0, 2))]
    across = [{"topic": T, "partition": p, "offset": o} for p, o in ((0, 3), (1, 0))]
    assert {r["message_id"]: r["positions"] for r in rows(con, results)} == {
        "m1": pos, "m2": None, "m3": across,
    }  # fmt: skip
    manifest, _ = write_local(
        con, str(tmp_path / "ledger"), "run-1", [], None, ("results", "run-1")
    )
    want = {"m1": pos, "m2": [{"topic": T, "partition": 0, "offset": 1}], "m3": across}
    store = SparkEntryStore(spark)
    read = versions.read_newest(SparkRules(spark), store, store.read_manifest(manifest))
    assert read is not None
    assert {r["message_id"]: plain(r["positions"]) for r in read.collect()} == want
    assert LOCAL.read_manifest(manifest) == store.read_manifest(manifest)
