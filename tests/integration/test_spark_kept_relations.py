"""A kept relation of the Spark rules that turns out small is broadcast to the joins that read
it, and one that turns out empty is planned as empty: Spark knows no size of a checkpoint's
rows, and would shuffle both sides of the join, or run jobs to find it empty. A window part
without rows is an empty input in the same way."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from recon.engines.spark import BROADCAST_MAX_ROWS, SparkRules
from recon.engines.spark_run import _without_rows
from recon.model import schemas
from recon.read.message_ids import write_empty_part

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.integration


def _join_plan(spark: SparkSession, rules: SparkRules) -> str:
    spark.range(200_000).selectExpr("id", "id % 1000 AS g").createOrReplaceTempView("big")
    joined = spark.sql("SELECT b.id FROM big b LEFT ANTI JOIN picked p ON b.g = p.g")
    plan = joined._jdf.queryExecution().executedPlan().toString()
    rules.release()
    return str(plan)


def test_a_small_kept_relation_is_broadcast(spark: SparkSession) -> None:
    rules = SparkRules(spark)
    # Five rows whose plan Spark sizes as the 5,000,000 it filters (40 MB: no broadcast).
    rules.define("picked", "SELECT id AS g FROM range(5000000) WHERE id < 5", keep=True)
    plan = _join_plan(spark, rules)
    assert "BroadcastHashJoin" in plan, plan
    assert "SortMergeJoin" not in plan


def test_a_big_kept_relation_is_left_to_spark(spark: SparkSession) -> None:
    rules = SparkRules(spark)
    rules.define("picked", f"SELECT id AS g FROM range({BROADCAST_MAX_ROWS + 1})", keep=True)
    analyzed = str(spark.table("picked")._jdf.queryExecution().analyzed().toString())
    rules.release()
    assert "ResolvedHint" not in analyzed, analyzed


def test_an_empty_kept_relation_is_planned_as_empty(spark: SparkSession) -> None:
    rules = SparkRules(spark)
    rules.define("picked", "SELECT id AS g FROM range(5000000) WHERE id < 0", keep=True)
    spark.range(1000).createOrReplaceTempView("big")
    joined = spark.sql("SELECT b.id FROM big b JOIN picked p ON b.id = p.g")
    optimized = str(joined._jdf.queryExecution().optimizedPlan().toString())
    assert rules.rows("picked") == []
    rules.release()
    assert "Join" not in optimized, optimized


def test_a_kept_relation_is_computed_once_and_read_from_its_stored_rows(
    spark: SparkSession,
) -> None:
    """A kept step's statement runs once, when the step is defined: the steps that read it
    later read its stored rows, never its statement again."""
    from pyspark.sql.functions import udf

    calls = spark.sparkContext.accumulator(0)

    # A plain Python UDF (no Arrow), one call per row.
    @udf("bigint", useArrow=False)
    def counted(value: int) -> int:
        calls.add(1)
        return value

    spark.udf.register("counted", counted)
    rules = SparkRules(spark)
    rules.define("picked", f"SELECT counted(id) AS g FROM range({BROADCAST_MAX_ROWS + 7})",
                 keep=True)  # fmt: skip
    after_define = calls.value
    assert spark.table("picked").count() == BROADCAST_MAX_ROWS + 7
    assert spark.table("picked").filter("g = 7").count() == 1
    rules.release()
    assert after_define == BROADCAST_MAX_ROWS + 7
    assert calls.value == after_define


def _stored(spark: SparkSession) -> dict[int, tuple[bool, int, int]]:
    """By RDD id: (in memory?, bytes in memory, bytes on disk) of each RDD the session holds
    blocks of."""
    infos = spark.sparkContext._jsc.sc().getRDDStorageInfo()
    return {i.id(): (i.storageLevel().useMemory(), i.memSize(), i.diskSize()) for i in infos
            if i.numCachedPartitions() > 0}  # fmt: skip


def test_a_kept_relation_is_stored_on_disk_not_in_the_heap(spark: SparkSession) -> None:
    """A 10M window's joined rows held in the heap made the steps after them spill (see
    recon.spark.CHECKPOINT_LEVEL)."""
    rules = SparkRules(spark)
    before = _stored(spark)
    rules.define("picked", "SELECT id AS g, repeat('x', 40) AS pad FROM range(200000)", keep=True)
    stored = [kept for rdd, kept in _stored(spark).items() if rdd not in before]
    assert spark.table("picked").filter("g = 7").collect()[0]["pad"] == "x" * 40
    rules.release()
    assert stored and all(not memory and in_memory == 0 and on_disk > 0
                          for memory, in_memory, on_disk in stored), stored  # fmt: skip


def test_a_window_part_without_rows_is_known_from_its_footers(
    spark: SparkSession, tmp_path: Path
) -> None:
    frame = spark.range(3).selectExpr("id", "'m' AS message_id")
    frame.write.parquet(str(tmp_path / "some"))
    frame.limit(0).write.parquet(str(tmp_path / "none"))
    assert _without_rows(str(tmp_path / "none"))
    assert not _without_rows(str(tmp_path / "some"))
    assert not _without_rows(str(tmp_path / "missing"))  # left to Spark, which says so


def test_a_part_without_offsets_is_written_without_spark_as_spark_would_read_it(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The Spark engine writes a part with no offset to read (most windows' inflight part) as
    the local engine does, without a job: Spark reads it with the window's columns and types, and
    a re-run's empty part replaces what an earlier run wrote there."""
    part = tmp_path / "inflight"
    spark.range(3).selectExpr("'t' AS topic").write.parquet(str(part))
    write_empty_part(str(part))
    assert _without_rows(str(part))
    read = spark.read.parquet(str(part))
    assert read.count() == 0
    assert [(f.name, f.dataType) for f in read.schema] == [
        (f.name, f.dataType) for f in schemas.WINDOW
    ]
