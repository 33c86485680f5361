"""The verdict rules on the Spark engine, over the named scenarios of ``fixtures.scenarios``
(one per rule, their result rows computed by hand) and a few inputs of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from fixtures.engines import spark_counts, spark_ledger_next
from fixtures.engines import spark_reconcile as reconcile
from fixtures.scenarios import SCENARIOS, Expected, Scenario, T, frames, rec, sink
from pyspark.sql import DataFrame, SparkSession

from recon import schemas
from recon.errors import InputSchemaError
from recon.verdicts import ALL_VERDICTS

pytestmark = pytest.mark.unit


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


# --- running the named scenarios -------------------------------------------------------------
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
        return (name, r[1], r[2], _ns(name, r[3]), *r[4:])

    def maybe(rows: list[tuple] | None, fn: Callable[[tuple], tuple]) -> list[tuple] | None:
        return None if rows is None else [fn(r) for r in rows]

    return replace(
        s,
        window=[record(r) for r in s.window],
        sinks=[(f"{name}:{k}", _ns(name, m), *rest) for k, m, *rest in s.sinks],
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


def _shareable(s: Scenario) -> bool:
    return not s.unverifiable and not s.ends and s.plain


#: The scenarios judged together in one Spark run. The others (a run-wide input, or a declared
#: check) are judged one by one in tests/unit/test_local_verdicts.py, which holds the local
#: engine to the hand-computed rows and Spark to the local engine column by column: judging them
#: here again would only run the same Spark job twice.
SHARED = [name for name, make in SCENARIOS.items() if _shareable(make())]


@pytest.fixture(scope="module")
def batch(spark: SparkSession) -> dict[str, list[Any]]:
    """Rows per scenario, from one reconcile over every scenario that can share a run."""
    shared = {name: namespaced(name, make()) for name, make in SCENARIOS.items() if name in SHARED}
    everything = Scenario(
        window=[r for s in shared.values() for r in s.window],
        sinks=[r for s in shared.values() for r in s.sinks],
        ledger=_concat([s.ledger for s in shared.values()]),
        pending=_concat([s.pending for s in shared.values()]),
        uncommitted=_concat([s.uncommitted for s in shared.values()]),
    )
    rows = reconcile(**frames(spark, everything)).collect()
    return {name: [r for r in rows if belongs_to(name, r)] for name in shared}


@pytest.mark.parametrize("name", SHARED)
def test_scenario(batch: dict[str, list[Any]], name: str) -> None:
    assert {as_tuple(r, name) for r in batch[name]} == SCENARIOS[name]().expected


# --- shapes, counts, ledger ---------------------------------------------------------------------


def test_result_has_the_documented_schema(spark: SparkSession) -> None:
    results = reconcile(**frames(spark, SCENARIOS["topic_duplicate"]()))
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


def test_ledger_update_after_later_duplicate(spark: SparkSession) -> None:
    inputs = frames(spark, SCENARIOS["duplicate_in_later_run"]())
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


def test_pending_sink_rows_count_when_the_message_is_judged(spark: SparkSession) -> None:
    # Run 1 sees m3's sink row while m3 is pending; run 2 judges m3 without a new sink row.
    run1 = frames(spark, SCENARIOS["pending"]())
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
