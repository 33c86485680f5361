"""Both engines' rule runs in the shapes the unit tests use: a results relation in, the ledger
entries out, as one call each (``recon.engines`` runs the steps of ``recon.rules``)."""

from __future__ import annotations

from typing import Any

from recon.engines import duckdb as duckdb_engine
from recon.engines import spark as spark_engine
from recon.rules.run import next_ledger


def spark_reconcile(
    window: Any,
    sink_rows: Any,
    ledger: Any | None = None,
    pending_records: Any | None = None,
    uncommitted_ids: Any | None = None,
    unverifiable_partitions: Any | None = None,
    partition_ends: Any | None = None,
) -> Any:
    """The Spark engine's results (a DataFrame) for these inputs."""
    rules, _ = spark_engine.reconcile(
        window.sparkSession, window, sink_rows, ledger, pending_records, uncommitted_ids,
        unverifiable_partitions, partition_ends,
    )  # fmt: skip
    return rules.frame("results")


def spark_counts(window: Any, sink_rows: Any, **inputs: Any) -> dict[str, int]:
    """The Spark engine's counts per verdict."""
    rules, counts = spark_engine.reconcile(window.sparkSession, window, sink_rows, **inputs)
    rules.release()
    return counts


def spark_ledger_next(spark: Any, run_id: str) -> Any:
    """The next ledger (a DataFrame) after the last :func:`spark_reconcile` in ``spark``."""
    rules = spark_engine.SparkRules(spark)
    next_ledger(rules, run_id)
    return rules.frame("ledger_next")


def duckdb_reconcile(con: Any, **inputs: Any) -> tuple[str, dict[str, int]]:
    """The local engine's results relation and counts for these inputs (relation names)."""
    _, counts = duckdb_engine.reconcile(con, **inputs)
    return "results", counts


def duckdb_ledger(con: Any, run_id: str, relation: str = "ledger_next") -> str:
    """The next ledger (``ledger_next``, or its part ``ledger_known``) after the last
    :func:`duckdb_reconcile` on ``con``."""
    next_ledger(duckdb_engine.DuckDBRules(con), run_id)
    return relation
