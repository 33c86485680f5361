"""The cold part of the ledger: segments, their membership filters, and their merges (local
store; ``recon.ledger``).

By hand, with ``COMPACT_AFTER`` 2 and ``MERGE_FANOUT`` 2, one entry per run: a version's hot
entries merge into a level-0 segment at the third, two level-0 segments into a level-1 one, two
level-1 into a level-2. After run 12 the whole history is one level-2 segment. ``m-old`` is
judged delivered by run 1 and never touched again; run 13 meets a second sink row of it (a
duplicate of a message from the cold part) and must judge it ``duplicated``, finding its entry
through the segment's filter (a lookup of that one id), and just the same when the segment has
no filter (a scan). The Spark engine's reading of the same segments is in
``tests/integration/test_ledger_segments_on_spark.py`` (it needs a JVM).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
from fixtures import ledger_history
from fixtures.engines import duckdb_reconcile
from fixtures.ledger_history import HOT, LOCAL, history, layout, run_version
from fixtures.relations import ARROW_SINK, ARROW_WINDOW, arrow_table, rows
from fixtures.scenarios import rec, sink

from recon.engines.duckdb import DuckDBRules
from recon.ledger import local_segments, membership, versions

pytestmark = pytest.mark.unit


@pytest.fixture
def small_tiers(monkeypatch: pytest.MonkeyPatch) -> None:
    ledger_history.small_tiers(monkeypatch)


def test_hot_entries_merge_into_segments_and_full_levels_into_the_next(
    tmp_path: Path, small_tiers: None
) -> None:
    con = duckdb.connect()
    layouts = history(con, str(tmp_path), 12)
    e = 201  # rows per run
    assert layouts == [
        [HOT],
        [HOT, HOT],
        [(0, 3 * e)],
        [(0, 3 * e), HOT],
        [(0, 3 * e), HOT, HOT],
        [(1, 6 * e)],  # a second level-0 of runs 4-6, merged with the first
        [(1, 6 * e), HOT],
        [(1, 6 * e), HOT, HOT],
        [(1, 6 * e), (0, 3 * e)],
        [(1, 6 * e), (0, 3 * e), HOT],
        [(1, 6 * e), (0, 3 * e), HOT, HOT],
        [(2, 12 * e)],
    ]


def test_no_merge_past_the_row_bound(
    tmp_path: Path, small_tiers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(versions, "MERGE_MAX_ROWS", 1000)
    layouts = history(duckdb.connect(), str(tmp_path), 6)
    assert layouts[-1] == [(0, 603), (0, 603)]


def test_a_newer_entry_in_a_later_segment_wins(tmp_path: Path, small_tiers: None) -> None:
    con = duckdb.connect()
    root = str(tmp_path)
    manifest = None
    for n, verdict in ((1, "lost"), (2, "delivered"), (3, "delivered"), (4, "duplicated"),
                       (5, "delivered"), (6, "delivered"), (7, "delivered")):  # fmt: skip
        judged = [("m1", verdict)] if n in (1, 4) else [(f"m{n}", verdict)]
        manifest = run_version(con, root, n, LOCAL.read_manifest(manifest), judged)
    entries = LOCAL.read_manifest(manifest)
    assert layout(entries) == [(1, 5), HOT]  # runs 1-6 hold five messages: m1 twice
    con.execute("CREATE TEMP TABLE ids AS SELECT * FROM (VALUES ('m1'), ('m9')) t(message_id)")
    found = versions.read_newest(DuckDBRules(con), LOCAL, entries, "ids")
    got = [(r["message_id"], r["verdict"], r["first_run_id"]) for r in rows(con, found)]
    assert got == [("m1", "duplicated", "run-4")]


@pytest.mark.parametrize("filtered", [True, False], ids=["looked-up", "scanned"])
def test_a_duplicate_of_a_message_in_the_cold_part_is_found(
    tmp_path: Path, small_tiers: None, monkeypatch: pytest.MonkeyPatch, filtered: bool
) -> None:
    con = duckdb.connect()
    history(con, str(tmp_path / "ledger"), 12)
    manifest = sorted((tmp_path / "ledger").glob("run-12.manifest"))[0]
    entries = LOCAL.read_manifest(str(manifest))
    (segment,) = entries
    directory = versions.parse_entry(segment)[0]
    if not filtered:  # a segment without its index is scanned
        for name in (membership.HEADER, membership.BITS):
            os.remove(os.path.join(directory, name))

    looked_up: list[tuple[dict[int, str], list[int]]] = []
    real = local_segments.lookups

    def spy(*args: Any) -> tuple[dict[int, str], list[int]]:
        looked_up.append(real(*args))
        return looked_up[-1]

    monkeypatch.setattr(local_segments, "lookups", spy)

    # Run 13: record m-13; sink rows m-13 and a second row of m-old.
    con.register("w", arrow_table([rec(13, "m-13")], ARROW_WINDOW))
    con.register("s", arrow_table([sink("k13", "m-13"), sink("k-old-2", "m-old")], ARROW_SINK))
    con.execute("CREATE TEMP TABLE ids AS SELECT message_id FROM w UNION SELECT message_id FROM s")
    found = versions.read_newest(DuckDBRules(con), LOCAL, entries, "ids")
    con.execute(f"CREATE TEMP TABLE l AS SELECT * FROM {found}")
    assert [(r["message_id"], r["first_run_id"]) for r in rows(con, "l")] == [("m-old", "run-1")]
    ((tables, scanned),) = looked_up
    if filtered:  # only m-old's row is read from the segment
        assert scanned == [] and list(tables) == [0]
        assert [r["message_id"] for r in rows(con, tables[0])] == ["m-old"]
    else:
        assert scanned == [0] and tables == {}

    results, _ = duckdb_reconcile(
        con, window="w", sink_rows="s", ledger="l", pending=None, uncommitted=None,
        unverifiable=None, partition_ends=None,
    )  # fmt: skip
    verdicts = {r["message_id"]: (r["verdict"], r["sink_count"]) for r in rows(con, results)}
    assert verdicts == {"m-old": ("duplicated", 2), "m-13": ("delivered", 1)}


def test_the_filter_finds_every_id_added_and_lets_few_others_through(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    added = rng.integers(0, 2**63, size=200_000, dtype=np.uint64) * np.uint64(2)
    absent = added[:100_000] + np.uint64(1)  # odd: never added
    found = membership.build(np.array_split(added, 3), len(added))
    assert found.might_contain(membership.Probe(added)).all()
    # 4e-5 expected, 4 of 100,000; a broken block choice or bit spread lets thousands through.
    assert found.might_contain(membership.Probe(absent)).sum() <= 40

    membership.write(str(tmp_path), found, check=11)
    stored = membership.read(str(tmp_path), check=11)
    assert stored is not None and stored.might_contain(membership.Probe(added)).all()
    assert membership.read(str(tmp_path), check=12) is None  # another hash: not used
    bits = tmp_path / membership.BITS
    bits.write_bytes(bits.read_bytes()[:-4])
    assert membership.read(str(tmp_path), check=11) is None  # cut short: not used
