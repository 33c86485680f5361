"""The verdict rules on tiny hand-made frames, one named scenario per rule.

Each scenario lists its inputs and the complete set of result rows expected, computed by hand as
``(verdict, message_id, partition, offsets, sink_count, sink_keys, topic_duplicate)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import pytest
from engines_kit import spark_counts, spark_ledger_next
from engines_kit import spark_reconcile as reconcile
from pyspark.sql import DataFrame, SparkSession

from recon import schemas
from recon.errors import InputSchemaError
from recon.verdicts import ALL_VERDICTS

pytestmark = pytest.mark.unit

T = "payments"
TS = datetime(2026, 1, 1, tzinfo=UTC)

Expected = tuple[str, str | None, int | None, tuple[int, ...], int, tuple[str, ...], bool]


def rec(offset: int, mid: str | None, partition: int = 0, invalid: str | None = None) -> tuple:
    """A Kafka record as read from the window (or as a pending record)."""
    return (T, partition, offset, mid, invalid, TS)


def sink(key: str, mid: str | None, seq: int | None = None) -> tuple:
    return (key, mid, seq)


def led(mid: str, offsets: list[int], sink_count: int, verdict: str = "delivered") -> tuple:
    """A ledger entry written by an earlier run ``run-1`` (without ``positions``: derived)."""
    return (mid, T, 0, min(offsets) if offsets else None, offsets, sink_count, "run-1", verdict)


LEDGER_NO_POSITIONS = (
    "message_id string, topic string, partition int, first_offset bigint, offsets array<bigint>, "
    "sink_count bigint, first_run_id string, verdict string"
)


@dataclass
class Scenario:
    window: list[tuple] = field(default_factory=list)
    sinks: list[tuple] = field(default_factory=list)
    ledger: list[tuple] | None = None
    pending: list[tuple] | None = None
    uncommitted: list[tuple] | None = None
    unverifiable: list[tuple[str, int, int, int]] | None = None
    #: (partition, window_to, log_start_offset) per partition: where pending entries expire
    ends: list[tuple[int, int, int]] | None = None
    expected: set[Expected] = field(default_factory=set)


_SCENARIOS: dict[str, Callable[[], Scenario]] = {}


def scenario(fn: Callable[[], Scenario]) -> Any:
    """A named scenario: a pytest fixture, also kept here so that one Spark job judges them all."""
    _SCENARIOS[fn.__name__] = fn
    return pytest.fixture(fn)


def frames(spark: SparkSession, s: Scenario) -> dict[str, Any]:
    def df(rows: list[tuple] | None, schema: Any) -> DataFrame | None:
        return None if rows is None else spark.createDataFrame(rows, schema)

    return {
        "window": spark.createDataFrame(s.window, schemas.WINDOW),
        "sink_rows": spark.createDataFrame(s.sinks, schemas.SINK_ROWS),
        "ledger": df(s.ledger, LEDGER_NO_POSITIONS),
        "pending_records": df(s.pending, schemas.PENDING),
        "uncommitted_ids": df(s.uncommitted, schemas.UNCOMMITTED),
        "unverifiable_partitions": s.unverifiable,
        "partition_ends": s.ends,
    }


def as_tuple(row: Any, name: str | None = None) -> Expected:
    """A result row in the scenarios' terms; ``name`` strips that scenario's prefixes."""

    def plain(value: str | None) -> str | None:
        return _strip(name, value) if name else value

    return (
        row["verdict"],
        plain(row["message_id"]),
        row["partition"],
        tuple(row["offsets"]),
        row["sink_count"],
        tuple(str(plain(k)) for k in row["sink_keys"]),
        row["topic_duplicate"],
    )


def as_set(results: DataFrame) -> set[Expected]:
    return {as_tuple(r) for r in results.collect()}


# --- named scenarios ----------------------------------------------------------------------------


@scenario
def all_delivered() -> Scenario:
    return Scenario(
        window=[rec(0, "m1"), rec(1, "m2"), rec(2, "m3")],
        sinks=[sink("k1", "m1"), sink("k2", "m2"), sink("k3", "m3")],
        expected={
            ("delivered", "m1", 0, (0,), 1, ("k1",), False),
            ("delivered", "m2", 0, (1,), 1, ("k2",), False),
            ("delivered", "m3", 0, (2,), 1, ("k3",), False),
        },
    )


@scenario
def one_lost() -> Scenario:
    return Scenario(
        window=[rec(0, "m1"), rec(1, "m2"), rec(2, "m3")],
        sinks=[sink("k1", "m1"), sink("k3", "m3")],
        expected={
            ("delivered", "m1", 0, (0,), 1, ("k1",), False),
            ("lost", "m2", 0, (1,), 0, (), False),
            ("delivered", "m3", 0, (2,), 1, ("k3",), False),
        },
    )


@scenario
def one_duplicate() -> Scenario:
    return Scenario(
        window=[rec(0, "m1"), rec(1, "m2")],
        sinks=[sink("k1", "m1"), sink("k3", "m2"), sink("k2", "m2")],
        expected={
            ("delivered", "m1", 0, (0,), 1, ("k1",), False),
            ("duplicated", "m2", 0, (1,), 2, ("k2", "k3"), False),
        },
    )


@scenario
def topic_duplicate() -> Scenario:
    # m1: producer retry in the same partition; m3: a retry that landed in another partition.
    # Each is still one message for the sink verdict.
    return Scenario(
        window=[rec(0, "m1"), rec(1, "m2"), rec(2, "m1"), rec(3, "m3"), rec(0, "m3", partition=1)],
        sinks=[sink("k1", "m1"), sink("k2", "m2"), sink("k3", "m3")],
        expected={
            ("delivered", "m1", 0, (0, 2), 1, ("k1",), True),
            ("delivered", "m2", 0, (1,), 1, ("k2",), False),
            ("delivered", "m3", 0, (0, 3), 1, ("k3",), True),
        },
    )


@scenario
def offset_gap() -> Scenario:
    # Offset 2 is a transaction marker: no record there, and no loss inferred from the gap.
    return Scenario(
        window=[rec(0, "m1"), rec(1, "m2"), rec(3, "m3"), rec(4, "m4")],
        sinks=[sink("k1", "m1"), sink("k2", "m2"), sink("k3", "m3"), sink("k4", "m4")],
        expected={
            ("delivered", "m1", 0, (0,), 1, ("k1",), False),
            ("delivered", "m2", 0, (1,), 1, ("k2",), False),
            ("delivered", "m3", 0, (3,), 1, ("k3",), False),
            ("delivered", "m4", 0, (4,), 1, ("k4",), False),
        },
    )


@scenario
def phantom() -> Scenario:
    return Scenario(
        window=[rec(0, "m1")],
        sinks=[sink("k1", "m1"), sink("k9", "ghost"), sink("k8", "ghost")],
        expected={
            ("delivered", "m1", 0, (0,), 1, ("k1",), False),
            ("phantom", "ghost", None, (), 2, ("k8", "k9"), False),
        },
    )


@scenario
def aborted_read() -> Scenario:
    # Offset 1 held a record of an aborted transaction (2 is its abort marker); a consumer reading
    # read_uncommitted wrote it. "ghost" is in no record at all: still a plain phantom.
    return Scenario(
        window=[rec(0, "m1"), rec(3, "m2")],
        sinks=[sink("k1", "m1"), sink("k2", "m2"), sink("kx", "ab1"), sink("k9", "ghost")],
        uncommitted=[("ab1", T, 0, 1)],
        expected={
            ("delivered", "m1", 0, (0,), 1, ("k1",), False),
            ("delivered", "m2", 0, (3,), 1, ("k2",), False),
            ("aborted_read", "ab1", 0, (1,), 1, ("kx",), False),
            ("phantom", "ghost", None, (), 1, ("k9",), False),
        },
    )


@scenario
def duplicate_in_later_run() -> Scenario:
    # Run 2: m1 and m2 were delivered in run 1; a second sink row for m1 lands now.
    return Scenario(
        ledger=[led("m1", [0], 1), led("m2", [1], 1)],
        window=[rec(2, "m3")],
        sinks=[sink("k3", "m3"), sink("k1b", "m1")],
        expected={
            ("duplicated", "m1", 0, (0,), 2, ("k1b",), False),
            ("delivered", "m3", 0, (2,), 1, ("k3",), False),
        },
    )


@scenario
def rewind() -> Scenario:
    # The group was reset to offset 0: m1 and m2 are read again at the same offsets (not topic
    # duplicates). The consumer inserted m1 again; m2's write was an upsert (no new row).
    return Scenario(
        ledger=[led("m1", [0], 1), led("m2", [1], 1)],
        window=[rec(0, "m1"), rec(1, "m2"), rec(2, "m3")],
        sinks=[sink("k1b", "m1"), sink("k3", "m3")],
        expected={
            ("duplicated", "m1", 0, (0,), 2, ("k1b",), False),
            ("delivered", "m2", 0, (1,), 1, (), False),
            ("delivered", "m3", 0, (2,), 1, ("k3",), False),
        },
    )


@scenario
def below_log_start() -> Scenario:
    # The window should start at 0 but retention removed 0..99. m5's record was among them: its
    # sink row cannot be matched, so it is unverifiable rather than a phantom.
    return Scenario(
        unverifiable=[(T, 0, 0, 100)],
        window=[rec(100, "m100"), rec(101, "m101")],
        sinks=[sink("k100", "m100"), sink("k101", "m101"), sink("k5", "m5")],
        expected={
            ("delivered", "m100", 0, (100,), 1, ("k100",), False),
            ("delivered", "m101", 0, (101,), 1, ("k101",), False),
            ("unverifiable", None, 0, (), 0, (), False),
            ("unverifiable", "m5", None, (), 1, ("k5",), False),
        },
    )


# --- pending messages whose records the window reaches, or can no longer reach --------------
# A ledger entry left ``pending`` (its record was past the committed offset, or past the last
# stable offset: read uncommitted) is judged once every record it was seen at lies behind the
# window's end (``ends``: partition 0's window ends at 10) or below the log-start offset.


@scenario
def pending_still_ahead() -> Scenario:
    # Seen at offset 12, the window ends at 10: still pending, reported again.
    return Scenario(
        ledger=[led("m1", [12], 1, "pending")],
        ends=[(0, 10, 0)],
        expected={("pending", "m1", 0, (12,), 1, (), False)},
    )


@scenario
def pending_then_committed() -> Scenario:
    # Its record is now read committed in the window: judged on the ledger's row.
    return Scenario(
        window=[rec(5, "m1")],
        ledger=[led("m1", [5], 1, "pending")],
        ends=[(0, 10, 0)],
        expected={("delivered", "m1", 0, (5,), 1, (), False)},
    )


@scenario
def pending_transaction_aborted() -> Scenario:
    # The window passed offset 5 without a committed record there; the read_uncommitted pass
    # finds m1 at 5: its transaction aborted.
    return Scenario(
        ledger=[led("m1", [5], 1, "pending")],
        uncommitted=[("m1", T, 0, 5)],
        ends=[(0, 10, 0)],
        expected={("aborted_read", "m1", 0, (5,), 1, (), False)},
    )


@scenario
def pending_never_committed() -> Scenario:
    # The window passed offset 5, no record committed or aborted carries m1 any more.
    return Scenario(
        ledger=[led("m1", [5], 1, "pending")],
        uncommitted=[],
        ends=[(0, 10, 0)],
        expected={("phantom", "m1", 0, (5,), 1, (), False)},
    )


@scenario
def pending_removed_by_retention() -> Scenario:
    # Retention moved the log start to 20; the consumer (and the window) still end at 5.
    return Scenario(
        ledger=[led("m1", [7], 1, "pending"), led("m2", [25], 0, "pending")],
        ends=[(0, 5, 20)],
        expected={
            ("unverifiable", "m1", 0, (7,), 1, (), False),
            ("pending", "m2", 0, (25,), 0, (), False),
        },
    )


@scenario
def empty_window() -> Scenario:
    return Scenario(ledger=[led("m1", [0], 1)], pending=[], uncommitted=[], unverifiable=[])


@scenario
def invalid_id() -> Scenario:
    return Scenario(
        window=[
            rec(0, "m1"),
            rec(1, None, invalid="no message_id header"),
            rec(2, "  "),
            rec(3, "m3", invalid="tombstone"),
        ],
        sinks=[sink("k1", "m1"), sink("kx", None), sink("ky", "")],
        expected={
            ("delivered", "m1", 0, (0,), 1, ("k1",), False),
            ("invalid", None, 0, (1,), 0, (), False),
            ("invalid", "  ", 0, (2,), 0, (), False),
            ("invalid", "m3", 0, (3,), 0, (), False),
            ("invalid", None, None, (), 1, ("kx",), False),
            ("invalid", "", None, (), 1, ("ky",), False),
        },
    )


@scenario
def pending() -> Scenario:
    # The consumer wrote m3 before committing its offset: m3's row is not a phantom.
    return Scenario(
        window=[rec(0, "m1"), rec(1, "m2")],
        pending=[rec(2, "m3"), rec(3, "m4"), rec(4, None, invalid="no message_id header")],
        sinks=[sink("k1", "m1"), sink("k3", "m3")],
        expected={
            ("delivered", "m1", 0, (0,), 1, ("k1",), False),
            ("lost", "m2", 0, (1,), 0, (), False),
            ("pending", "m3", 0, (2,), 1, ("k3",), False),
            ("pending", "m4", 0, (3,), 0, (), False),
        },
    )


@scenario
def late_delivery() -> Scenario:
    # m1 was judged lost in run 1; its first sink row arrives now. m2 stays lost: no row, no news.
    return Scenario(
        ledger=[led("m1", [0], 0, verdict="lost"), led("m2", [1], 0, verdict="lost")],
        sinks=[sink("k1", "m1")],
        expected={("delivered", "m1", 0, (0,), 1, ("k1",), False)},
    )


# --- running them ---------------------------------------------------------------------------
#
# Spark's fixed cost per job dominates on frames this small, so the scenarios without a run-wide
# input (unverifiable partitions) are judged together in one job. Each gets its own topic and
# prefixes its ids and sink keys with its name, so they cannot see each other; the rows are
# split back and the prefixes stripped before comparing.


def _ns(name: str, value: str | None) -> str | None:
    # Blank ids stay blank: they must remain invalid. They are told apart by topic or sink key.
    return f"{name}:{value}" if value is not None and value.strip() else value


def namespaced(name: str, s: Scenario) -> Scenario:
    def record(r: tuple) -> tuple:
        return (name, r[1], r[2], _ns(name, r[3]), r[4], r[5])

    def maybe(rows: list[tuple] | None, fn: Callable[[tuple], tuple]) -> list[tuple] | None:
        return None if rows is None else [fn(r) for r in rows]

    return replace(
        s,
        window=[record(r) for r in s.window],
        sinks=[(f"{name}:{k}", _ns(name, m), q) for k, m, q in s.sinks],
        pending=maybe(s.pending, record),
        ledger=maybe(s.ledger, lambda r: (_ns(name, r[0]), name, *r[2:])),
        uncommitted=maybe(s.uncommitted, lambda r: (_ns(name, r[0]), name, *r[2:])),
    )


def _strip(name: str, value: str | None) -> str | None:
    prefix = f"{name}:"
    return value[len(prefix) :] if value is not None and value.startswith(prefix) else value


def belongs_to(name: str, row: Any) -> bool:
    prefix = f"{name}:"
    return (
        row["topic"] == name
        or (row["message_id"] or "").startswith(prefix)
        or any(k.startswith(prefix) for k in row["sink_keys"])
    )


def _concat(parts: list[list[tuple] | None]) -> list[tuple] | None:
    present = [p for p in parts if p is not None]
    return None if not present else [row for p in present for row in p]


@pytest.fixture(scope="module")
def batch(spark: SparkSession) -> dict[str, list[Any]]:
    """Rows per scenario, from one reconcile over every scenario that can share a run."""
    shared = {
        name: namespaced(name, make())
        for name, make in _SCENARIOS.items()
        if not make().unverifiable and not make().ends
    }
    everything = Scenario(
        window=[r for s in shared.values() for r in s.window],
        sinks=[r for s in shared.values() for r in s.sinks],
        ledger=_concat([s.ledger for s in shared.values()]),
        pending=_concat([s.pending for s in shared.values()]),
        uncommitted=_concat([s.uncommitted for s in shared.values()]),
    )
    rows = reconcile(**frames(spark, everything)).collect()
    return {name: [r for r in rows if belongs_to(name, r)] for name in shared}


@pytest.mark.parametrize("name", list(_SCENARIOS))
def test_scenario(
    spark: SparkSession, batch: dict[str, list[Any]], request: pytest.FixtureRequest, name: str
) -> None:
    chosen: Scenario = request.getfixturevalue(name)
    if name in batch:
        assert {as_tuple(r, name) for r in batch[name]} == chosen.expected
    else:
        assert as_set(reconcile(**frames(spark, chosen))) == chosen.expected


# --- shapes, counts, ledger ---------------------------------------------------------------------


def test_result_has_the_documented_schema(spark: SparkSession, topic_duplicate: Scenario) -> None:
    results = reconcile(**frames(spark, topic_duplicate))
    got = [(f.name, f.dataType.simpleString()) for f in results.schema.fields]
    assert got == [(f.name, f.dataType.simpleString()) for f in schemas.RESULT.fields]


def test_cross_partition_duplicate_names_every_position(batch: dict[str, list[Any]]) -> None:
    name = "topic_duplicate"
    m3 = next(r for r in batch[name] if r["message_id"] == f"{name}:m3")
    assert [(p["partition"], p["offset"]) for p in m3["positions"]] == [(0, 3), (1, 0)]
    assert f"{name}/0@3, {name}/1@0" in m3["detail"]


def test_verdict_counts(spark: SparkSession) -> None:
    mixed = Scenario(
        window=[rec(0, "m1"), rec(1, "m1"), rec(2, "m2"), rec(4, None, invalid="no id")],
        sinks=[sink("k1", "m1"), sink("kx", "ab1"), sink("k9", "ghost")],
        uncommitted=[("ab1", T, 0, 3)],
    )
    inputs = frames(spark, mixed)
    counts = spark_counts(
        inputs.pop("window"), inputs.pop("sink_rows"), ledger=inputs["ledger"],
        pending=inputs["pending_records"], uncommitted=inputs["uncommitted_ids"],
        unverifiable=inputs["unverifiable_partitions"], partition_ends=inputs["partition_ends"],
    )  # fmt: skip
    assert list(counts) == list(ALL_VERDICTS)  # every verdict, in the vocabulary's order
    assert counts == dict.fromkeys(ALL_VERDICTS, 0) | {
        "delivered": 1,
        "lost": 1,
        "topic_duplicate": 1,
        "aborted_read": 1,
        "phantom": 1,
        "invalid": 1,
    }


def test_ledger_update_after_later_duplicate(
    spark: SparkSession, duplicate_in_later_run: Scenario
) -> None:
    inputs = frames(spark, duplicate_in_later_run)
    reconcile(**inputs)
    ledger = spark_ledger_next(spark, "run-2")
    # A message at one position is stored without lists: its offset is first_offset.
    got = {
        r["message_id"]: (
            r["verdict"], r["sink_count"],
            list(r["offsets"]) if r["offsets"] is not None else [r["first_offset"]],
            r["first_run_id"],
        )
        for r in ledger.collect()
    }  # fmt: skip
    assert got == {
        "m1": ("duplicated", 2, [0], "run-1"),
        "m2": ("delivered", 1, [1], "run-1"),
        "m3": ("delivered", 1, [2], "run-2"),
    }
    assert [f.name for f in ledger.schema.fields] == [f.name for f in schemas.LEDGER.fields]


def test_pending_sink_rows_count_when_the_message_is_judged(
    spark: SparkSession, pending: Scenario
) -> None:
    # Run 1 sees m3's sink row while m3 is pending; run 2 judges m3 without a new sink row.
    run1 = frames(spark, pending)
    reconcile(**run1)
    ledger = spark_ledger_next(spark, "run-1")
    run2 = Scenario(window=[rec(2, "m3"), rec(3, "m4")])
    results = reconcile(**(frames(spark, run2) | {"ledger": ledger}))
    assert as_set(results) == {
        ("delivered", "m3", 0, (2,), 1, (), False),
        ("lost", "m4", 0, (3,), 0, (), False),
    }


def test_plain_delivery_has_no_detail(batch: dict[str, list[Any]]) -> None:
    assert [r["detail"] for r in batch["all_delivered"]] == [None, None, None]


def test_late_delivery_says_so(batch: dict[str, list[Any]]) -> None:
    (row,) = [r for r in batch["late_delivery"] if r["message_id"] == "late_delivery:m1"]
    assert "judged lost (first seen in run run-1)" in row["detail"]


def test_phantom_whose_record_commits_later_is_not_lost(spark: SparkSession) -> None:
    # A read_uncommitted consumer wrote m1 while its transaction was still open.
    run1 = Scenario(sinks=[sink("k1", "m1")])
    reconcile(**frames(spark, run1))
    ledger = spark_ledger_next(spark, "run-1")
    run2 = Scenario(window=[rec(0, "m1")])
    results = reconcile(**(frames(spark, run2) | {"ledger": ledger}))
    (row,) = results.collect()
    assert as_tuple(row) == ("delivered", "m1", 0, (0,), 1, (), False)
    assert "reported as phantom before the record was committed" in row["detail"]


def test_unverifiable_partitions_mark_the_removed_range(spark: SparkSession) -> None:
    info = [(T, 1, 5, 10), (T, 2, 10, 10)]
    results = reconcile(**(frames(spark, Scenario()) | {"unverifiable_partitions": info}))
    rows = results.collect()
    # Partition 2 starts exactly at log start: nothing is missing there.
    assert [(r["verdict"], r["partition"], r["first_offset"]) for r in rows] == [
        ("unverifiable", 1, 5)
    ]
    assert rows[0]["detail"].startswith("offsets 5 to 9 were removed")


def test_missing_column_is_a_clear_error(spark: SparkSession) -> None:
    window = spark.createDataFrame([(T, 0, 0)], "topic string, partition int, offset bigint")
    sinks = spark.createDataFrame([], schemas.SINK_ROWS)
    with pytest.raises(InputSchemaError, match="records: missing column"):
        reconcile(window, sinks)
