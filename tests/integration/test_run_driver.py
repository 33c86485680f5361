"""The one driver of step 3 (``recon.engines.driver.judge_run``) on both engines, over tiny
relations handed out by a fake IO: the steps around the verdict steps (the read_uncommitted
pass, a sink scanned whole, the discrepancy rows and samples) decide the same on each."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import duckdb
import pytest

from recon.engines.driver import JudgedRun, judge_run
from recon.engines.duckdb import DuckDBRules
from recon.engines.spark import SparkRules
from recon.rules import INPUT_COLUMNS
from recon.run.paths import results_path
from recon.snapshot.window import PartitionWindow

pytestmark = pytest.mark.integration

_SPARK_TYPES = {"VARCHAR": "string", "INTEGER": "int", "BIGINT": "bigint",
                "BIGINT[]": "array<bigint>"}  # fmt: skip
#: A ledger as written before positions were kept: the rules derive them from the offsets.
_LEDGER = [(c, t) for c, t in INPUT_COLUMNS["ledger"] if c != "positions"]


def window(partition: int, start: int, end: int) -> PartitionWindow:
    """A partition's window ``[start, end)``, everything committed and stable."""
    return PartitionWindow(
        topic="t", partition=partition, log_start_offset=0, last_stable_offset=end,
        high_watermark=end, committed_offset=end, settled_offset=end, window_from=start,
        window_to=end, previous_committed=start, rewound=False, new_partition=False,
    )  # fmt: skip


@dataclass
class Inputs:
    """A run's inputs as rows: records are ``(topic, partition, offset, message_id, reason)``."""

    windows: list[PartitionWindow]
    committed: list[tuple[Any, ...]] = field(default_factory=list)
    sink: list[tuple[Any, ...]] = field(default_factory=list)
    ledger: list[tuple[Any, ...]] | None = None
    #: what a read_uncommitted pass sees, by partition
    every: list[tuple[Any, ...]] = field(default_factory=list)
    ingest_seq: bool = True


class FakeIO:
    """:class:`recon.engines.run_io.RunIO` over in-memory rows, on one engine."""

    def __init__(self, engine: str, spark: Any, inputs: Inputs) -> None:
        self.engine, self.spark, self.inputs = engine, spark, inputs
        self.con = duckdb.connect() if engine == "duckdb" else None
        self.rules: Any = DuckDBRules(self.con) if engine == "duckdb" else SparkRules(spark)
        self.read_uncommitted: list[list[int]] = []
        self.wrote: list[bool] = []

    def _relation(self, name: str, columns: list[tuple[str, str]], rows: list[Any]) -> Any:
        if self.engine == "spark":
            schema = ", ".join(f"`{c}` {_SPARK_TYPES[t]}" for c, t in columns)
            return self.spark.createDataFrame(rows, schema)
        assert self.con is not None
        table = f"fake_{name}"
        declared = ", ".join(f'"{c}" {t}' for c, t in columns)
        self.con.execute(f"CREATE TEMP TABLE {table} ({declared})")
        if rows:
            marks = ", ".join("?" for _ in columns)
            self.con.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
        return table

    def part(self, part: str) -> Any:
        rows = self.inputs.committed if part == "committed" else []
        return self._relation(part, list(INPUT_COLUMNS["records"]), rows)

    def sink_rows(self) -> Any:
        return self._relation("sink", list(INPUT_COLUMNS["sink_rows"]), self.inputs.sink)

    data_dir = "/nonexistent"

    @property
    def entry_store(self) -> FakeIO:
        return self

    def read_manifest(self, path: str | None) -> list[str]:
        return [] if path is None else [path]

    def register(self, rules: Any, entries: list[str], ids: Any | None) -> bool:
        """The whole ledger, as one stored entry directory."""
        if self.inputs.ledger is None:
            return False
        rows = [(*r, 0) for r in self.inputs.ledger]
        rules.use("ledger_stored", self._relation("ledger", [*_LEDGER, ("_seq", "INTEGER")], rows))
        rules.use("ledger_results", None)
        return True

    def results_at(self, path: str) -> Any | None:
        """Only the run's own results, once written, are read back: no scenario has a base run.
        A copy of them, as a store reads its written file back: the steps after the write (the
        discrepancies) read it instead of the rules' relation."""
        assert path == results_path(self.data_dir, "p", "r1"), path
        if self.engine == "spark":
            frame = self.rules.relation("results")
            return self.spark.createDataFrame(frame.collect(), frame.schema)
        assert self.con is not None
        self.con.execute("CREATE TEMP TABLE fake_written AS SELECT * FROM results")
        return "fake_written"

    def read_every(self, windows: list[PartitionWindow]) -> Any:
        partitions = sorted(w.partition for w in windows)
        self.read_uncommitted.append(partitions)
        rows = [r for r in self.inputs.every if r[1] in partitions]
        return self._relation(
            f"every{len(self.read_uncommitted)}", list(INPUT_COLUMNS["every"]), rows
        )

    def write_version(self, base_entries: list[str], has_ledger: bool) -> str:
        self.wrote.append(has_ledger)
        return "ledger-version"

    def discrepancy_rows(self) -> Any:
        raise AssertionError("judge_run commits nothing")

    def close(self) -> None:
        if self.con is not None:
            self.con.close()


def run(engine: str, spark: Any, inputs: Inputs) -> tuple[JudgedRun, FakeIO, set[tuple[Any, ...]]]:
    """The judged run, its IO, and its discrepancy rows as ``(verdict, message_id, offsets,
    sink_count, topic_duplicate)``."""
    io = FakeIO(engine, spark, inputs)
    cfg = SimpleNamespace(
        name="p",
        sink=SimpleNamespace(
            ingest_seq_column="seq" if inputs.ingest_seq else None, time_column=None
        ),
        latency=None,
        payload=None,
        order=None,
    )
    record = SimpleNamespace(
        run_id="r1", windows=inputs.windows, base_run_id=None,
        base_ledger_path=None if inputs.ledger is None else "base-version",
    )  # fmt: skip
    judged = judge_run(cfg, record, io)  # type: ignore[arg-type]
    rows = {(r[0], r[1], tuple(r[4] or ()), r[7], r[8]) for r in io.rules.rows("discrepancies")}
    return judged, io, rows


ENGINES = ["duckdb", "spark"]


@pytest.fixture
def aborted_in_a_gap() -> Inputs:
    """Partition 0: offsets 0 and 2 committed (m1, m3); offset 1 is m2's aborted record, which
    only a read_uncommitted pass sees, and m2 has a sink row. Partition 1 is gapless."""
    return Inputs(
        windows=[window(0, 0, 3), window(1, 0, 1)],
        committed=[("t", 0, 0, "m1", None), ("t", 0, 2, "m3", None), ("t", 1, 0, "m4", None)],
        sink=[("k1", "m1"), ("k2", "m2"), ("k3", "m3"), ("k4", "m4")],
        every=[("t", 0, 0, "m1", None), ("t", 0, 1, "m2", None), ("t", 0, 2, "m3", None),
               ("t", 1, 0, "m4", None)],
    )  # fmt: skip


@pytest.mark.parametrize("engine", ENGINES)
def test_a_phantom_in_an_offset_gap_is_an_aborted_read(
    engine: str, spark: Any, aborted_in_a_gap: Inputs
) -> None:
    judged, io, rows = run(engine, spark, aborted_in_a_gap)
    assert io.read_uncommitted == [[0]], "only the partition with a gap is read again"
    assert judged.counts["aborted_read"] == 1
    assert judged.counts["phantom"] == 0
    assert judged.counts["delivered"] == 3
    assert rows == {("aborted_read", "m2", (1,), 1, False)}
    assert [s["message_id"] for s in judged.samples["aborted_read"]] == ["m2"]
    assert judged.sink_rows_scanned == 4
    assert io.wrote == [False]


@pytest.mark.parametrize("engine", ENGINES)
def test_no_gap_no_read_uncommitted_pass(engine: str, spark: Any, aborted_in_a_gap: Inputs) -> None:
    # m2's record is committed after all: the sink row has its record, nothing is read again.
    aborted_in_a_gap.committed.append(("t", 0, 1, "m2", None))
    judged, io, rows = run(engine, spark, aborted_in_a_gap)
    assert io.read_uncommitted == []
    assert judged.counts["delivered"] == 4
    assert rows == set()
    assert judged.samples == {}


@pytest.mark.parametrize("engine", ENGINES)
def test_a_phantom_without_a_gap_stays_a_phantom(engine: str, spark: Any) -> None:
    # m9 has a sink row and no record; every offset of the window is a committed record, so no
    # aborted record can carry it: no read_uncommitted pass, and the counts are the written
    # results' (counted once, after the write).
    inputs = Inputs(
        windows=[window(0, 0, 2)],
        committed=[("t", 0, 0, "m1", None), ("t", 0, 1, "m2", None)],
        sink=[("k1", "m1"), ("k9", "m9")],
    )
    judged, io, rows = run(engine, spark, inputs)
    assert io.read_uncommitted == []
    counts = judged.counts
    assert (counts["phantom"], counts["lost"], counts["delivered"]) == (1, 1, 1)
    assert rows == {("phantom", "m9", (), 1, False), ("lost", "m2", (1,), 0, False)}


@pytest.fixture
def whole_sink_one_changed() -> Inputs:
    """A sink scanned whole: m1 and m2 were delivered once each by an earlier run; m2 now has a
    second row, m1 has not changed, and no new record was read."""
    return Inputs(
        windows=[window(0, 2, 2)],
        sink=[("k1", "m1"), ("k2", "m2"), ("k2b", "m2")],
        ledger=[("m1", "t", 0, 0, [0], 1, "r0", "delivered"),
                ("m2", "t", 0, 1, [1], 1, "r0", "delivered")],
        ingest_seq=False,
    )  # fmt: skip


@pytest.mark.parametrize("engine", ENGINES)
def test_whole_sink_judges_only_the_messages_whose_rows_changed(
    engine: str, spark: Any, whole_sink_one_changed: Inputs
) -> None:
    judged, io, rows = run(engine, spark, whole_sink_one_changed)
    assert rows == {("duplicated", "m2", (1,), 2, False)}
    assert judged.counts["duplicated"] == 1
    assert judged.counts["delivered"] == 0, "m1's row count did not change: no verdict"
    assert judged.sink_rows_scanned == 2, "only m2's rows are passed again"
    assert io.wrote == [True]


@pytest.mark.parametrize("engine", ENGINES)
def test_samples_follow_partition_then_offset(engine: str, spark: Any) -> None:
    # 13 messages lost per partition, read in no order; the samples keep 20.
    offsets = (7, 3, 12, 2, 1, 0, 4, 5, 11, 10, 6, 9, 8)
    lost = [("t", p, o, f"m{p}-{o:02}", None) for p in (1, 0) for o in offsets]
    inputs = Inputs(windows=[window(0, 0, 13), window(1, 0, 13)], committed=lost)
    judged, _, _ = run(engine, spark, inputs)
    assert judged.counts["lost"] == 26
    expected = [f"m0-{o:02}" for o in range(13)] + [f"m1-{o:02}" for o in range(7)]
    assert [s["message_id"] for s in judged.samples["lost"]] == expected


def test_both_engines_write_the_same_discrepancies(spark: Any, aborted_in_a_gap: Inputs) -> None:
    both = [run(engine, spark, aborted_in_a_gap) for engine in ENGINES]
    (duck, _, duck_rows), (sp, _, spark_rows) = both
    assert duck_rows == spark_rows
    assert duck.counts == sp.counts
    assert duck.samples == sp.samples
