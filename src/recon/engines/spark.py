"""The rules run by Spark: inputs are temporary views over DataFrames, kept steps are
checkpointed (computed once, held in memory then on disk), every statement is the rule file
rendered for Spark SQL.

A temporary view made from a DataFrame holds that DataFrame's whole plan, so a step that reads
a view reads its plan again: without a cut, the plan of the last step would repeat every earlier
one as often as it is referenced (growing with each step, and exponentially when a ledger built
by one run is the next run's input). A local checkpoint replaces a kept step's plan by its rows.
"""

from __future__ import annotations

from typing import Any

from recon.rules.judging import Judging
from recon.rules.render import for_dialect
from recon.rules.run import (
    PartitionEnds,
    Replays,
    UnverifiableRows,
    conform_sql,
    judge_inputs,
    register_empty,
)
from recon.spark import checkpoint, persist

#: A kept relation of at most this many rows is broadcast to every join that reads it. Spark
#: knows no size of a checkpoint's rows, so it shuffled both sides of a join with one: the
#: window's 1M joined rows were shuffled to meet the 6,000 hashes of the general path's
#: messages, once for the counts and again for the results file.
BROADCAST_MAX_ROWS = 100_000


class SparkRules:
    """:class:`recon.rules.run.RuleEngine` over one SparkSession.

    :param spark: the session; the rules' relations are its temporary views.
    """

    dialect = "spark"

    def __init__(self, spark: Any, *, owns_session: bool = False) -> None:
        self.spark = spark
        self._kept: dict[str, Any] = {}
        self._owns_session = owns_session

    def define(self, name: str, statement: str, *, keep: bool = False) -> None:
        frame = self.spark.sql(statement)
        kept = None
        empty = _planned_empty(self.spark, frame) if keep else None
        if empty is not None:
            # Nothing to compute or store: the view is the empty relation Spark planned, which
            # every later step prunes as it plans (an empty or tiny window's steps are mostly
            # these: a checkpoint and a count were two jobs each).
            frame = empty
        elif keep:
            # A second session of a Spark Connect server cannot read its local checkpoints
            # back (4.1.1: "No DataFrame with id ... is found in the session"); its few steps
            # (a ledger compaction's) are cached instead.
            kept = persist(frame) if self._owns_session else checkpoint(frame)
            # The hint, or the empty relation, only stands in for the view: the stored rows are
            # released through ``kept`` (a cache; a checkpoint's once unreferenced:
            # recon.spark.checkpoint).
            frame = self._sized(kept)
        frame.createOrReplaceTempView(name)
        old = self._kept.pop(name, None)
        if kept is not None:
            self._kept[name] = kept
        if old is not None:
            old.unpersist()

    def _sized(self, kept: Any) -> Any:
        """``kept`` (counting it reads its stored rows, never more than the bound's) as the
        view stands for it: with a broadcast hint when small, and when empty as an empty
        relation, which Spark prunes while planning (a checkpoint it would read in a job of its
        own for every step that reads it, before AQE finds it empty)."""
        from pyspark.sql import functions as F

        rows = kept.limit(BROADCAST_MAX_ROWS + 1).count()
        if rows == 0:
            return kept.limit(0)  # the optimiser makes it an empty local relation
        return F.broadcast(kept) if rows <= BROADCAST_MAX_ROWS else kept

    def rows(self, name: str) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.spark.table(name).collect()]

    def relation(self, name: str) -> Any:
        """The relation ``name`` as a DataFrame."""
        return self.spark.table(name)

    def reread(self, name: str, source: Any) -> None:
        source.createOrReplaceTempView(name)
        old = self._kept.pop(name, None)
        if old is not None:
            old.unpersist()

    def scratch(self) -> SparkRules:
        from recon.spark import is_remote, sibling_session

        # On a Spark Connect server the sibling is a session of the server's, stopped by close().
        return SparkRules(sibling_session(self.spark), owns_session=is_remote(self.spark))

    def close(self) -> None:
        """Unpersist every kept relation; stop the session if it was made for this namespace."""
        self.release()
        if self._owns_session:
            self.spark.stop()

    def use(self, name: str, frame: Any | None) -> None:
        """Input ``name`` read from ``frame`` (None: the run has none).

        :param name: one of ``recon.rules.INPUTS``.
        """
        if frame is None:
            register_empty(self, name)
            return
        source = f"recon_input_{name}"
        frame.createOrReplaceTempView(source)
        self.define(name, for_dialect(conform_sql(name, source, frame.columns), self.dialect))

    def release(self) -> None:
        """Unpersist every kept relation."""
        for frame in self._kept.values():
            frame.unpersist()
        self._kept.clear()


def _planned_empty(spark: Any, frame: Any) -> Any | None:
    """``frame`` as the empty relation Spark's optimiser already made of it (its inputs empty,
    or a join or filter that cannot hold a row), with no plan behind it; None when it may hold
    rows. Asked of the plan, no job run: in a JVM of its own, the plan the action would run
    anyway (a frame keeps its optimised plan); on Spark Connect, one request for the plan."""
    jdf = getattr(frame, "_jdf", None)
    if jdf is not None:
        plan = jdf.queryExecution().optimizedPlan()
        if plan.getClass().getSimpleName() != "LocalRelation" or not plan.data().isEmpty():
            return None
        from pyspark.sql.classic.dataframe import DataFrame

        dataset = spark._jvm.org.apache.spark.sql.classic.Dataset
        return DataFrame(dataset.ofRows(spark._jsparkSession, plan), spark)
    lines = [ln for ln in frame._explain_string().strip().splitlines() if ln.strip()]
    if len(lines) != 2 or not lines[1].startswith("LocalTableScan <empty>"):
        return None
    # Spark Connect sends an empty local relation of the schema as it is (a LocalRelation).
    return spark.createDataFrame([], frame.schema)


def reconcile(
    spark: Any,
    window: Any,
    sink_rows: Any,
    ledger: Any | None = None,
    pending: Any | None = None,
    uncommitted: Any | None = None,
    unverifiable: UnverifiableRows | None = None,
    partition_ends: PartitionEnds | None = None,
    judging: Judging | None = None,
    replays: Replays | None = None,
    source_rows: Any | None = None,
    source_known: Any | None = None,
    named_once: bool = False,
    dead_letters: Any | None = None,
) -> tuple[SparkRules, dict[str, int]]:
    """Judge a run with the rules: the view ``results`` (``schemas.RESULT``) and the counts.

    :param window: the window's committed records (a DataFrame); ``sink_rows``, ``ledger``,
        ``pending``, ``uncommitted``: the other inputs (``recon.rules``), None when absent.
    :param unverifiable: ``(topic, partition, from_offset, log_start_offset)`` per partition.
    :param partition_ends: ``(partition, window_to, log_start_offset)`` per partition.
    :param judging: the pipeline's declared checks (``recon.rules.run.judge``).
    :param replays: ``(topic, partition, offset)`` of each record a repair replayed.
    :param source_rows, source_known: a run with a source (``recon.rules``), None without.
    :param named_once: the source names each messageId once at most (``recon.rules.run.judge``).
    :param dead_letters: the records of the pipeline's dead-letter topics (``diverted``).
    """
    rules = SparkRules(spark)
    inputs = {
        "records": window, "sink_rows": sink_rows, "ledger": ledger, "pending": pending,
        "uncommitted": uncommitted, "source_rows": source_rows, "source_known": source_known,
        "dead_letters": dead_letters,
    }  # fmt: skip
    return rules, judge_inputs(
        rules, inputs, unverifiable, partition_ends, judging, replays, named_once=named_once
    )
