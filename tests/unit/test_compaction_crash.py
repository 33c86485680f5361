"""A compaction that dies half-way leaves a working ledger, and ``recon prune`` sweeps what it
left (local ledger store, compaction after two entries).

By hand: run-1 judges m1 lost and m2 delivered, run-2 judges m3 delivered, run-3 judges m1
duplicated. run-3's version lists three entries, so it compacts them into a segment; its first
attempt dies while writing the segment (a disk full), after writing its delta and part of the
segment: half its Parquet file, or all of it and half its membership filter. The
pipeline still points at run-2's version, which reads as before; run-3 run again compacts, and
its version holds m1 as run-3 judged it, m2 and m3 as before. What the dead attempt wrote is
listed by no version: a prune of everything before run-3 removes it, never the current version
or its compacted entry.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fixtures.relations import ARROW_LEDGER, arrow_table, rows

from recon.engines.duckdb import DuckDBRules
from recon.ledger import membership, versions
from recon.ledger.local import LocalEntryStore
from recon.prune.plan import choose_runs, cutoff_time, needed_files, removable_files
from recon.rules.run import RuleEngine, conform_sql
from recon.store.prune import PipelineRuns, StoredRun

pytestmark = pytest.mark.unit

P = "orders"
NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


class DiskFull(OSError):
    pass


class DiesInParquet(LocalEntryStore):
    """Writes half a segment's Parquet file, then fails as a full disk would."""

    def write_segment(self, rules: RuleEngine, relation: Any, directory: str, seq: int) -> int:
        os.makedirs(directory)
        Path(directory, "part-00000.parquet").write_bytes(b"PAR1 half a file")
        raise DiskFull("No space left on device")


class DiesInFilter(LocalEntryStore):
    """Writes a segment's Parquet file and half its membership filter, then fails."""

    def write_segment(self, rules: RuleEngine, relation: Any, directory: str, seq: int) -> int:
        def half(directory: str, found: Any, check: int) -> None:
            Path(directory, membership.BITS).write_bytes(found.bits.tobytes()[:16])
            raise DiskFull("No space left on device")

        real = membership.write
        membership.write = half  # type: ignore[assignment]
        try:
            return super().write_segment(rules, relation, directory, seq)
        finally:
            membership.write = real  # type: ignore[assignment]


def _delta(con: Any, judged: list[tuple[str, int, str]], run: str) -> str:
    entries = [(m, "t", 0, o, [o], 1, run, v, None, None) for m, o, v in judged]
    con.register("d", arrow_table(entries, ARROW_LEDGER))
    columns = [r[0] for r in con.execute("DESCRIBE d").fetchall()]
    con.execute(f"CREATE OR REPLACE TEMP VIEW d_entries AS {conform_sql('ledger', 'd', columns)}")
    return "d_entries"


def _write(con: Any, store: LocalEntryStore, root: str, name: str, base: list[str],
           judged: list[tuple[str, int, str]], run: str) -> str:  # fmt: skip
    delta = _delta(con, judged, run)
    manifest, _ = versions.write_version(DuckDBRules(con), store, root, name, base, delta=delta)
    return manifest


def _facts(con: Any, manifest: str) -> dict[str, tuple[str, str]]:
    store = LocalEntryStore()
    found = versions.read_newest(DuckDBRules(con), store, store.read_manifest(manifest))
    assert found is not None
    return {r["message_id"]: (r["verdict"], r["first_run_id"]) for r in rows(con, found)}


@pytest.mark.parametrize("dies", [DiesInParquet, DiesInFilter])
def test_a_compaction_cut_short_leaves_the_ledger_working_and_prune_sweeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dies: type[LocalEntryStore]
) -> None:
    monkeypatch.setattr(versions, "COMPACT_AFTER", 2)
    con = duckdb.connect()
    data = tmp_path / "data"
    root = str(data / "ledger" / P)
    store = LocalEntryStore()
    v1 = _write(con, store, root, "run-1-0000000a", [],
                [("m1", 10, "lost"), ("m2", 11, "delivered")], "run-1")  # fmt: skip
    v2 = _write(con, store, root, "run-2-0000000a", store.read_manifest(v1),
                [("m3", 20, "delivered")], "run-2")  # fmt: skip
    before = _facts(con, v2)

    with pytest.raises(DiskFull):
        _write(con, dies(), root, "run-3-0000000a", store.read_manifest(v2),
               [("m1", 30, "duplicated")], "run-3")  # fmt: skip
    left = sorted(os.listdir(root))
    assert "run-3-0000000a.manifest" not in left
    assert {"run-3-0000000a"} < set(left) and any("compacted" in n for n in left), left
    assert _facts(con, v2) == before == {
        "m1": ("lost", "run-1"), "m2": ("delivered", "run-1"), "m3": ("delivered", "run-2"),
    }  # fmt: skip

    v3 = _write(con, store, root, "run-3-0000000b", store.read_manifest(v2),
                [("m1", 30, "duplicated")], "run-3")  # fmt: skip
    assert len(store.read_manifest(v3)) == 1
    assert _facts(con, v3) == {**before, "m1": ("duplicated", "run-3")}

    # Everything so far was written an hour ago; run-3 is the current state, from run-2's version.
    hour_ago = (NOW - timedelta(hours=1)).timestamp()
    for parent, dirs, files in os.walk(data):
        for name in dirs + files:
            os.utime(os.path.join(parent, name), (hour_ago, hour_ago))
    ended = NOW - timedelta(hours=1)
    runs = [
        StoredRun("run-1", "passed", ended, ended, v1, None, None),
        StoredRun("run-2", "passed", ended, ended, v2, "run-1", v1),
        StoredRun("run-3", "passed", ended, ended, v3, "run-2", v2),
    ]
    stored = PipelineRuns(P, runs, "run-3", v3, frozenset())
    removed, kept = choose_runs(stored, NOW)
    assert removed == ["run-1", "run-2"] and kept == {"run-3": "current state"}
    needed = needed_files(stored, removed)
    found = removable_files(str(data), P, needed, cutoff_time(stored, NOW, NOW))
    gone = {os.path.basename(f.path) for f in found}
    dead = {n for n in left if n.startswith("run-3-0000000a")}
    assert dead <= gone and "run-1-0000000a.manifest" in gone, (dead, gone)
    kept_names = set(os.listdir(root)) - gone
    assert kept_names == {
        "run-3-0000000b.manifest",
        os.path.basename(versions.parse_entry(store.read_manifest(v3)[0])[0]),
        "run-2-0000000a.manifest",
        "run-1-0000000a",
        "run-2-0000000a",
    }
