"""Ledger versions the local engine writes: its results stand for the entries of new messages.

For every named scenario with a ledger, run 1's entries are written as a version, run 2 is
judged against it and writes its results plus the entries of known messages; the version read
back, by this engine and by the Spark engine, must equal the old entries updated by
``ledger_update`` (the specification, shared with the Spark engine).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fixtures.engines import duckdb_ledger
from fixtures.relations import ARROW_LEDGER, arrow_table, as_read, judge, plain, row_key, rows
from fixtures.scenarios import SCENARIOS

from recon.ledger import local as local_ledger
from recon.ledger import spark as spark_ledger
from recon.rules.run import conform_sql

pytestmark = pytest.mark.unit

WITH_LEDGER = [name for name, make in SCENARIOS.items() if make().ledger is not None]


def _versions(tmp_path: Path, name: str) -> tuple[Any, str, list[dict[str, Any]]]:
    """(connection, run 2's manifest, the entries expected in it)."""
    s = SCENARIOS[name]()
    con, results = judge(s)
    root = str(tmp_path / "ledger")
    # The rules' ledger input: the scenario's entries with their positions derived.
    first, _ = local_ledger.write_version(con, root, "run-1", [], "ledger")
    base = local_ledger.read_manifest(first)
    known = duckdb_ledger(con, "run-2", "ledger_known")
    second, results_file = local_ledger.write_version(
        con, root, "run-2", base, known, results=(results, "run-2")
    )
    assert results_file is not None and Path(results_file).is_file()
    every = "ledger_next"
    expected = sorted((as_read(plain(r)) for r in rows(con, every)), key=row_key)
    return con, second, expected


@pytest.mark.parametrize("name", WITH_LEDGER)
def test_the_version_read_back_here_equals_the_updated_ledger(tmp_path: Path, name: str) -> None:
    con, manifest, expected = _versions(tmp_path, name)
    merged = local_ledger.full_ledger(con, local_ledger.read_manifest(manifest), name="merged")
    assert merged == "merged"
    assert sorted((as_read(plain(r)) for r in rows(con, merged)), key=row_key) == expected


@pytest.mark.parametrize("name", WITH_LEDGER)
def test_the_spark_engine_reads_the_same_version(spark: Any, tmp_path: Path, name: str) -> None:
    _, manifest, expected = _versions(tmp_path, name)
    merged = spark_ledger.full_ledger(spark, spark_ledger.read_manifest(spark, manifest))
    got = sorted((plain(r) for r in merged.collect()), key=row_key)
    assert got == expected


def test_a_manifest_names_the_run_of_a_results_entry(tmp_path: Path) -> None:
    import duckdb

    con = duckdb.connect()
    con.register("l", arrow_table([], ARROW_LEDGER))
    con.execute("CREATE TEMP TABLE r AS SELECT 'delivered' AS verdict, 'm1' AS message_id")
    manifest, _ = local_ledger.write_version(
        con, str(tmp_path), "run-7", [], None, results=("r", "run-7")
    )
    (entry,) = local_ledger.read_manifest(manifest)
    assert spark_ledger.parse_entry(entry) == (f"{tmp_path}/run-7.results", "run-7")


@pytest.mark.parametrize("name", WITH_LEDGER)
def test_a_runs_entries_are_those_of_the_whole_version_for_its_ids(
    tmp_path: Path, name: str
) -> None:
    con, manifest, _ = _versions(tmp_path, name)
    entries = local_ledger.read_manifest(manifest)
    con.execute("CREATE TEMP TABLE ids AS SELECT message_id FROM w WHERE message_id IS NOT NULL")
    picked = local_ledger.ledger_for(con, entries, "ids", name="picked")
    merged = local_ledger.full_ledger(con, entries, name="merged")
    assert (picked, merged) == ("picked", "merged")
    want = f"SELECT * FROM {merged} WHERE message_id IN (SELECT message_id FROM ids)"
    got = sorted((plain(r) for r in rows(con, picked)), key=row_key)
    assert got == sorted((plain(r) for r in rows(con, f"({want})")), key=row_key)


def _entry(con: Any, root: str, run: str, base: list[str], ids_verdicts: list[tuple]) -> str:
    entries = [(m, "t", 0, o, [o], 1, run, v) for m, o, v in ids_verdicts]
    con.register("d", arrow_table(entries, ARROW_LEDGER))
    columns = [r[0] for r in con.execute("DESCRIBE d").fetchall()]
    con.execute(f"CREATE OR REPLACE TEMP VIEW d_entries AS {conform_sql('ledger', 'd', columns)}")
    manifest, _ = local_ledger.write_version(con, root, run, base, "d_entries")
    return manifest


def test_the_newest_entry_of_a_met_message_wins_and_unmet_entries_stay_out(
    tmp_path: Path,
) -> None:
    """Three runs' entries: m1 judged in runs 1 and 3, m2 in run 1 only, m3 in run 2 only.
    A run that meets m1 and m3 (and m9, never judged) gets run 3's m1 and run 2's m3; the whole
    version (compaction) holds those and run 1's m2, once each."""
    import duckdb

    con = duckdb.connect()
    root = str(tmp_path / "ledger")
    v1 = _entry(con, root, "run-1", [], [("m1", 10, "lost"), ("m2", 11, "delivered")])
    v2 = _entry(con, root, "run-2", local_ledger.read_manifest(v1), [("m3", 20, "delivered")])
    v3 = _entry(con, root, "run-3", local_ledger.read_manifest(v2), [("m1", 30, "duplicated")])
    entries = local_ledger.read_manifest(v3)
    assert len(entries) == 3
    con.execute(
        "CREATE TEMP TABLE ids AS SELECT * FROM (VALUES ('m1'), ('m3'), ('m9')) t(message_id)"
    )
    picked = local_ledger.ledger_for(con, entries, "ids", name="picked")
    assert picked == "picked"
    got = {r["message_id"]: (r["first_offset"], r["verdict"], r["first_run_id"])
           for r in rows(con, picked)}  # fmt: skip
    assert got == {"m1": (30, "duplicated", "run-3"), "m3": (20, "delivered", "run-2")}

    merged = local_ledger.full_ledger(con, entries, name="merged")
    assert merged == "merged"
    every = {r["message_id"]: (r["first_offset"], r["verdict"], r["first_run_id"])
             for r in rows(con, merged)}  # fmt: skip
    assert every == {**got, "m2": (11, "delivered", "run-1")}
    assert len(rows(con, merged)) == 3

    con.execute("CREATE OR REPLACE TEMP TABLE ids AS SELECT 'm9' AS message_id")
    empty = local_ledger.ledger_for(con, entries, "ids", name="empty")
    assert empty == "empty"  # a relation of the ledger's shape, not None (no ledger at all)
    assert rows(con, empty) == []
    assert [c[0] for c in con.execute(f"DESCRIBE {empty}").fetchall()] == list(
        local_ledger.LEDGER_COLUMNS
    )
