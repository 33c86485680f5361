"""The verdict rules on the Spark engine, over the named scenarios of ``fixtures.scenarios``
(one per rule, their result rows computed by hand) and a few inputs of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fixtures.engines import spark_counts, spark_ledger_next
from fixtures.engines import spark_reconcile as reconcile
from fixtures.scenarios import SCENARIOS, Expected, Scenario, T, frames, rec, sink
from fixtures.spark_batches import SparkJudged
from pyspark.sql import DataFrame, SparkSession

from recon.errors import InputSchemaError
from recon.model import schemas
from recon.model.verdicts import ALL_VERDICTS

pytestmark = pytest.mark.integration


def as_tuple(row: Any) -> Expected:
    """A result row in the scenarios' terms."""
    return (
        row["verdict"],
        row["message_id"],
        row["partition"],
        tuple(row["offsets"]),
        row["sink_count"],
        tuple(str(k) for k in row["sink_keys"]),
        row["topic_duplicate"],
    )


def as_set(results: DataFrame) -> set[Expected]:
    return {as_tuple(r) for r in results.collect()}


# --- the named scenarios ---------------------------------------------------------------------
#
# Judged a group at a time (fixtures.spark_batches): Spark's fixed cost per job dominates on
# frames this small.


@pytest.fixture
def batch(spark_judged: SparkJudged) -> Callable[[str], list[dict[str, Any]]]:
    return spark_judged.results


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario(batch: Callable[[str], list[Any]], name: str) -> None:
    assert {as_tuple(r) for r in batch(name)} == SCENARIOS[name]().expected


# --- shapes, counts, ledger ---------------------------------------------------------------------


def test_result_has_the_documented_schema(spark: SparkSession) -> None:
    results = reconcile(**frames(spark, SCENARIOS["topic_duplicate"]()))
    got = [(f.name, f.dataType.simpleString()) for f in results.schema.fields]
    assert got == [(f.name, f.dataType.simpleString()) for f in schemas.RESULT.fields]


def test_cross_partition_duplicate_names_every_position(
    batch: Callable[[str], list[Any]],
) -> None:
    name = "topic_duplicate"
    m3 = next(r for r in batch(name) if r["message_id"] == "m3")
    assert [(p["partition"], p["offset"]) for p in m3["positions"]] == [(0, 3), (1, 0)]
    assert f"{T}/0@3, {T}/1@0" in m3["detail"]


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


def test_plain_delivery_has_no_detail(batch: Callable[[str], list[Any]]) -> None:
    assert [r["detail"] for r in batch("all_delivered")] == [None, None, None]


def test_late_delivery_says_so(batch: Callable[[str], list[Any]]) -> None:
    (row,) = [r for r in batch("late_delivery") if r["message_id"] == "m1"]
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
