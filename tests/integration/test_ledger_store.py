"""The ledger as a chain of per-run deltas (``recon.ledger``) judges exactly as a whole ledger
rewritten every run did, while each run reads and writes only its own messages' entries.

Three runs of one partition, computed by hand:

- run-1: records m1@0, m2@1, m3@2; sink rows m1, m2 -> m1, m2 delivered, m3 lost.
- run-2: record m4@3; sink rows m3 (late), m1 (again) -> m3 delivered late, m1 duplicated (2),
  m4 lost.
- run-3: record m5@4; sink rows m1 (a third), m5, m4 (late) -> m1 duplicated (3), m5 delivered,
  m4 delivered late. m2 and m3 are not touched.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from fixtures.engines import spark_ledger_next
from fixtures.engines import spark_reconcile as reconcile
from fixtures.ledger_lookups import spark_scans
from fixtures.scenarios import LEDGER_BEFORE_TIMES, rec, sink
from pyspark.sql import DataFrame, SparkSession

from recon.engines.spark import SparkRules
from recon.ledger import membership, versions
from recon.ledger.spark import SparkEntryStore
from recon.model import schemas

pytestmark = pytest.mark.integration

T = "payments"
TS = datetime(2026, 1, 1, tzinfo=UTC)

RUNS: list[tuple[str, list[tuple[int, str]], list[tuple[str, str]]]] = [
    ("run-1", [(0, "m1"), (1, "m2"), (2, "m3")], [("k1", "m1"), ("k2", "m2")]),
    ("run-2", [(3, "m4")], [("k3", "m3"), ("k4", "m1")]),
    ("run-3", [(4, "m5")], [("k5", "m1"), ("k6", "m5"), ("k7", "m4")]),
]

# (verdict, sink_count, offsets, first_run_id) per message after run-3.
FINAL_LEDGER = {
    "m1": ("duplicated", 3, [0], "run-1"),
    "m2": ("delivered", 1, [1], "run-1"),
    "m3": ("delivered", 1, [2], "run-1"),
    "m4": ("delivered", 1, [3], "run-2"),
    "m5": ("delivered", 1, [4], "run-3"),
}
RUN3_VERDICTS = {"m1": ("duplicated", 3), "m4": ("delivered", 1), "m5": ("delivered", 1)}


def _inputs(
    spark: SparkSession, records: list[tuple[int, str]], sinks: list[tuple[str, str]]
) -> tuple[DataFrame, DataFrame]:
    window = spark.createDataFrame([rec(o, m) for o, m in records], schemas.WINDOW)
    sink_rows = spark.createDataFrame([sink(k, m) for k, m in sinks], schemas.SINK_ROWS)
    return window, sink_rows


def _by_id(ledger: DataFrame) -> dict[str, tuple[Any, ...]]:
    return {
        # A message at one position is stored without lists: its offset is first_offset.
        r["message_id"]: (
            r["verdict"],
            r["sink_count"],
            list(r["offsets"]) if r["offsets"] is not None else [r["first_offset"]],
            r["first_run_id"],
        )
        for r in ledger.collect()
    }


def _read_manifest(spark: SparkSession, path: str | None) -> list[str]:
    return SparkEntryStore(spark).read_manifest(path)


def _newest(spark: SparkSession, entries: list[str], *facts: DataFrame) -> DataFrame | None:
    """The newest entries of the messages in ``facts`` (of every message without facts)."""
    ids = None
    for frame in facts:
        picked = frame.select("message_id")
        ids = picked if ids is None else ids.unionByName(picked)
    return versions.read_newest(SparkRules(spark), SparkEntryStore(spark), entries, ids)


def _write(spark: SparkSession, root: str, run_id: str, base: list[str], delta: DataFrame) -> str:
    rules, entry_store = SparkRules(spark), SparkEntryStore(spark)
    return versions.write_version(rules, entry_store, root, run_id, base, delta=delta)[0]


def _run_chain(
    spark: SparkSession, root: Path, with_results: bool = False
) -> tuple[list[str], dict[str, DataFrame]]:
    """The three runs through recon.ledger.versions on Spark; returns the manifests and each
    run's results. ``with_results``: as the Spark engine writes on a local file system, each
    version holds the run's results (the entries of its new messages) and the entries of the
    messages the ledger knew."""
    manifests: list[str] = []
    results: dict[str, DataFrame] = {}
    for run_id, records, sinks in RUNS:
        window, sink_rows = _inputs(spark, records, sinks)
        entries = _read_manifest(spark, manifests[-1] if manifests else None)
        ledger = _newest(spark, entries, window, sink_rows)
        results[run_id] = reconcile(window, sink_rows, ledger).cache()
        delta = spark_ledger_next(spark, run_id)
        if not with_results:
            manifests.append(_write(spark, str(root), run_id, entries, delta))
            continue
        known = SparkRules(spark).relation("ledger_known") if ledger is not None else None
        manifests.append(
            versions.write_version(
                SparkRules(spark), SparkEntryStore(spark), str(root), run_id, entries,
                delta=known, results=(results[run_id], run_id),
            )[0]
        )  # fmt: skip
    return manifests, results


@pytest.fixture(scope="module")
def chain(
    spark: SparkSession, tmp_path_factory: pytest.TempPathFactory
) -> tuple[list[str], dict[str, DataFrame]]:
    """The three runs, once for the tests that only read what they left."""
    return _run_chain(spark, tmp_path_factory.mktemp("ledger"))


def test_the_delta_chain_judges_as_the_whole_ledger_did(
    spark: SparkSession, chain: tuple[list[str], dict[str, DataFrame]]
) -> None:
    manifests, results = chain
    run3 = {r["message_id"]: (r["verdict"], r["sink_count"]) for r in results["run-3"].collect()}
    assert run3 == RUN3_VERDICTS

    whole: DataFrame | None = None
    for run_id, records, sinks in RUNS:
        window, sink_rows = _inputs(spark, records, sinks)
        reconcile(window, sink_rows, whole)
        whole = spark_ledger_next(spark, run_id).cache()
    assert _by_id(whole) == FINAL_LEDGER
    final = _newest(spark, _read_manifest(spark, manifests[-1]))
    assert final is not None
    assert _by_id(final) == FINAL_LEDGER


def test_a_run_reads_and_writes_only_its_own_messages_entries(
    spark: SparkSession, chain: tuple[list[str], dict[str, DataFrame]]
) -> None:
    manifests, _ = chain
    entries = _read_manifest(spark, manifests[-1])
    assert [Path(e).name for e in entries] == ["run-1", "run-2", "run-3"]
    written = {r["message_id"] for r in spark.read.parquet(entries[-1]).collect()}
    assert written == {"m1", "m4", "m5"}

    ids = spark.createDataFrame([("m1",), ("m4",), ("m9",)], "message_id string")
    found = _newest(spark, entries, ids)
    assert found is not None
    # The newest entry of each: m1 as run-3 left it.
    assert _by_id(found) == {"m1": FINAL_LEDGER["m1"], "m4": FINAL_LEDGER["m4"]}


def _assert_sorted_and_indexed(entries: list[str]) -> None:
    """Each entry's files are sorted by message id, and each entry has its index."""
    for entry in entries:
        directory = Path(versions.parse_entry(entry)[0])
        assert (directory / membership.HEADER).is_file(), entry
        for part in directory.glob("part-*.parquet"):
            written = pq.read_table(part, columns=["message_id"]).column(0).to_pylist()
            assert written == sorted(written), part


def _looked_up(spark: SparkSession, entries: list[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """What a run looking m1, m4 and m9 up scanned (one list of manifest places per lookup);
    the entries it found are the newest of m1 and m4."""
    looked_up = spark_scans(monkeypatch)
    ids = spark.createDataFrame([("m1",), ("m4",), ("m9",)], "message_id string")
    found = _newest(spark, entries, ids)
    assert found is not None
    assert _by_id(found) == {"m1": FINAL_LEDGER["m1"], "m4": FINAL_LEDGER["m4"]}
    return looked_up


def test_spark_entries_carry_the_index_and_a_run_looks_them_up(
    spark: SparkSession,
    chain: tuple[list[str], dict[str, DataFrame]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Scanning an entry's hashes costs Spark seconds per million rows: the entries it writes
    are sorted within each file and indexed like segments, and a run looks them up. An entry
    without an index (as the local engine writes them) is scanned, with the same answer.

    On the module's chain (one chain of runs fewer than a chain per case): run-2's index is
    taken away for the second lookup, and put back after."""
    manifests, _ = chain
    entries = _read_manifest(spark, manifests[-1])
    _assert_sorted_and_indexed(entries)
    assert _looked_up(spark, entries, monkeypatch) == [[]]

    directories = [Path(versions.parse_entry(e)[0]) for e in entries]
    place = [d.name for d in directories].index("run-2")
    header = directories[place] / membership.HEADER
    kept = header.read_bytes()
    header.unlink()
    try:
        assert _looked_up(spark, entries, monkeypatch) == [[place]]
    finally:
        header.write_bytes(kept)


def test_spark_results_in_the_ledger_carry_the_index_and_a_run_looks_them_up(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the Spark engine writes on a local file system: each version holds the run's results
    (the entries of its new messages) beside the entries of the messages the ledger knew; the
    results are sorted and indexed too, and looked up."""
    manifests, _ = _run_chain(spark, tmp_path, with_results=True)
    entries = _read_manifest(spark, manifests[-1])
    names = [Path(versions.parse_entry(e)[0]).name for e in entries]
    assert names == ["run-1.results", "run-2.results", "run-2", "run-3.results", "run-3"]
    _assert_sorted_and_indexed(entries)
    assert _looked_up(spark, entries, monkeypatch) == [[]]


@pytest.mark.parametrize("order", ["sorted", "reversed"])
def test_spark_results_are_indexed_however_the_plan_left_them(
    spark: SparkSession, tmp_path: Path, order: str
) -> None:
    """Rows are written as Spark's plan leaves them (a run's come out of its sort-merge join in
    messageId order) and sorted only when the index finds a file out of order: either way
    every file ends sorted, with its index, and nothing else is left beside it."""
    ids = [f"m{i:03d}" for i in range(200)]
    rows = [(m, "delivered") for m in (ids if order == "sorted" else reversed(ids))]
    frame = spark.createDataFrame(rows, "message_id string, verdict string").coalesce(1)
    directory = tmp_path / "run-1.results"
    SparkEntryStore(spark).write_results(SparkRules(spark), frame, str(directory))
    assert (directory / membership.HEADER).is_file()
    (part,) = directory.glob("part-*.parquet")
    assert pq.read_table(part, columns=["message_id"]).column(0).to_pylist() == ids
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run-1.results"]


def test_compaction_folds_the_entries_into_one_sorted_segment(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(versions, "COMPACT_AFTER", 2)
    manifests, _ = _run_chain(spark, tmp_path)
    assert len(_read_manifest(spark, manifests[1])) == 2
    entries = _read_manifest(spark, manifests[-1])
    assert len(entries) == 1 and versions.segment_of(entries[0]) == (0, len(FINAL_LEDGER))
    segment = versions.parse_entry(entries[0])[0]
    assert "compacted" in segment
    assert _by_id(spark.read.parquet(segment)) == FINAL_LEDGER
    for part in Path(segment).glob("part-*.parquet"):
        written = pq.read_table(part, columns=["message_id"]).column(0).to_pylist()
        assert written == sorted(written), part
    # With the index both stores look a run's ids up in: m1's entry is found without a scan.
    assert (Path(segment) / membership.HEADER).is_file()
    found = _newest(spark, entries, spark.createDataFrame([("m1",)], "message_id string"))
    assert found is not None and _by_id(found) == {"m1": FINAL_LEDGER["m1"]}


def test_a_whole_ledger_written_before_manifests_is_read_as_one_entry(
    spark: SparkSession, tmp_path: Path
) -> None:
    old = str(tmp_path / "old-version")
    spark.createDataFrame(
        [("m1", T, 0, 0, [0], 1, "run-0", "delivered")], LEDGER_BEFORE_TIMES
    ).write.parquet(old)
    assert _read_manifest(spark, old) == [old]
    assert _read_manifest(spark, None) == []
    found = _newest(spark, [old], spark.createDataFrame([("m1",)], "message_id string"))
    assert found is not None
    assert _by_id(found) == {"m1": ("delivered", 1, [0], "run-0")}

    # The next run's entries go on top of it; both layouts are read together.
    window, sink_rows = _inputs(spark, [], [("k9", "m1")])
    reconcile(window, sink_rows, found)
    delta = spark_ledger_next(spark, "run-1")
    manifest = _write(spark, str(tmp_path / "ledger"), "run-1", [old], delta)
    both = _newest(spark, _read_manifest(spark, manifest))
    assert both is not None
    assert _by_id(both) == {"m1": ("duplicated", 2, [0], "run-0")}
