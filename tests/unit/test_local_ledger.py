"""Ledger versions the local engine writes: its results stand for the entries of new messages.

For every named scenario with a ledger, run 1's entries are written as a version, run 2 is
judged against it and writes its results plus the entries of known messages; the version read
back by this engine (by the Spark engine: ``tests/integration/test_local_ledger_on_spark.py``)
must equal the old entries updated by
``ledger_update`` (the specification, shared with the Spark engine).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fixtures.ledger_versions import LOCAL, WITH_LEDGER, versions_of, write_local
from fixtures.relations import ARROW_LEDGER, arrow_table, as_read, judge, plain, row_key, rows
from fixtures.scenarios import SCENARIOS, T

from recon.engines.duckdb import DuckDBRules
from recon.ledger import versions
from recon.ledger.local import LedgerMissing
from recon.rules import INPUT_COLUMNS, OPTIONAL_COLUMNS
from recon.rules.run import conform_sql

pytestmark = pytest.mark.unit


def _newest(con: Any, entries: list[str], name: str, ids: str | None = None) -> str:
    """The newest entries (of the messages in ``ids``, or of all) copied to table ``name``."""
    found = versions.read_newest(DuckDBRules(con), LOCAL, entries, ids)
    assert found == "ledger_newest"
    con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT * FROM {found}")
    return name


@pytest.mark.parametrize("name", WITH_LEDGER)
def test_the_version_read_back_here_equals_the_updated_ledger(tmp_path: Path, name: str) -> None:
    con, manifest, expected = versions_of(tmp_path, name)
    merged = _newest(con, LOCAL.read_manifest(manifest), "merged")
    assert sorted((as_read(plain(r)) for r in rows(con, merged)), key=row_key) == expected


def test_a_manifest_names_the_run_of_a_results_entry(tmp_path: Path) -> None:
    import duckdb

    con = duckdb.connect()
    con.register("l", arrow_table([], ARROW_LEDGER))
    con.execute("CREATE TEMP TABLE r AS SELECT 'delivered' AS verdict, 'm1' AS message_id")
    manifest, _ = write_local(con, str(tmp_path), "run-7", [], None, results=("r", "run-7"))
    (entry,) = LOCAL.read_manifest(manifest)
    assert versions.parse_entry(entry) == (f"{tmp_path}/run-7.results", "run-7")


@pytest.mark.parametrize("name", WITH_LEDGER)
def test_a_runs_entries_are_those_of_the_whole_version_for_its_ids(
    tmp_path: Path, name: str
) -> None:
    con, manifest, _ = versions_of(tmp_path, name)
    entries = LOCAL.read_manifest(manifest)
    con.execute("CREATE TEMP TABLE ids AS SELECT message_id FROM w WHERE message_id IS NOT NULL")
    picked = _newest(con, entries, "picked", "ids")
    merged = _newest(con, entries, "merged")
    want = f"SELECT * FROM {merged} WHERE message_id IN (SELECT message_id FROM ids)"
    got = sorted((plain(r) for r in rows(con, picked)), key=row_key)
    assert got == sorted((plain(r) for r in rows(con, f"({want})")), key=row_key)


def _entry(con: Any, root: str, run: str, base: list[str], ids_verdicts: list[tuple]) -> str:
    entries = [(m, "t", 0, o, [o], 1, run, v, None, None) for m, o, v in ids_verdicts]
    con.register("d", arrow_table(entries, ARROW_LEDGER))
    columns = [r[0] for r in con.execute("DESCRIBE d").fetchall()]
    con.execute(f"CREATE OR REPLACE TEMP VIEW d_entries AS {conform_sql('ledger', 'd', columns)}")
    manifest, _ = write_local(con, root, run, base, "d_entries")
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
    v2 = _entry(con, root, "run-2", LOCAL.read_manifest(v1), [("m3", 20, "delivered")])
    v3 = _entry(con, root, "run-3", LOCAL.read_manifest(v2), [("m1", 30, "duplicated")])
    entries = LOCAL.read_manifest(v3)
    assert len(entries) == 3
    con.execute(
        "CREATE TEMP TABLE ids AS SELECT * FROM (VALUES ('m1'), ('m3'), ('m9')) t(message_id)"
    )
    picked = _newest(con, entries, "picked", "ids")
    got = {r["message_id"]: (r["first_offset"], r["verdict"], r["first_run_id"])
           for r in rows(con, picked)}  # fmt: skip
    assert got == {"m1": (30, "duplicated", "run-3"), "m3": (20, "delivered", "run-2")}

    merged = _newest(con, entries, "merged")
    every = {r["message_id"]: (r["first_offset"], r["verdict"], r["first_run_id"])
             for r in rows(con, merged)}  # fmt: skip
    assert every == {**got, "m2": (11, "delivered", "run-1")}
    assert len(rows(con, merged)) == 3

    con.execute("CREATE OR REPLACE TEMP TABLE ids AS SELECT 'm9' AS message_id")
    # A relation of the ledger's shape, not None (no ledger at all).
    empty = _newest(con, entries, "empty", "ids")
    assert rows(con, empty) == []
    assert [c[0] for c in con.execute(f"DESCRIBE {empty}").fetchall()] == [
        c for c, _ in INPUT_COLUMNS["ledger"] + OPTIONAL_COLUMNS["ledger"]
    ]


def test_a_version_or_entry_gone_from_disk_stops_the_run(tmp_path: Path) -> None:
    """Read as empty, a missing version or entry would make every message it knows new again
    (a duplicate judged delivered): the store names what is missing instead."""
    import shutil

    import duckdb

    con = duckdb.connect()
    root = str(tmp_path / "ledger")
    v1 = _entry(con, root, "run-1", [], [("m1", 10, "delivered")])
    (entry,) = LOCAL.read_manifest(v1)
    shutil.rmtree(entry)
    with pytest.raises(LedgerMissing, match=f"ledger entry {entry} is missing"):
        _newest(con, [entry], "gone", None)
    shutil.rmtree(v1)
    with pytest.raises(LedgerMissing, match=f"ledger version {v1} is missing"):
        LOCAL.read_manifest(v1)


def test_results_keep_positions_only_for_a_message_at_several_and_entries_derive_the_rest(
    tmp_path: Path,
) -> None:
    """A run's results store ``positions`` only for a message at more than one position (m1
    twice in partition 0, m3 in partitions 0 and 1); read back as ledger entries, by either
    engine (Spark's in ``tests/integration/test_local_ledger_on_spark.py``), every message has its
    positions: m2's derived from its offset, m3's across both
    partitions (which its topic, partition and offsets alone could not say)."""
    con, results = judge(SCENARIOS["topic_duplicate"]())
    stored = {r["message_id"]: r["positions"] for r in rows(con, results)}
    pos = [{"topic": T, "partition": p, "offset": o} for p, o in ((0, 0), (0, 2))]
    across = [{"topic": T, "partition": p, "offset": o} for p, o in ((0, 3), (1, 0))]
    assert stored == {"m1": pos, "m2": None, "m3": across}

    manifest, _ = write_local(
        con, str(tmp_path / "ledger"), "run-1", [], None, ("results", "run-1")
    )
    want = {"m1": pos, "m2": [{"topic": T, "partition": 0, "offset": 1}], "m3": across}
    merged = _newest(con, LOCAL.read_manifest(manifest), "merged")
    assert {r["message_id"]: plain(r["positions"]) for r in rows(con, merged)} == want
