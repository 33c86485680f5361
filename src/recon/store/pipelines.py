"""Forgetting a pipeline: where it stands (after a re-created topic), or all that is stored."""

from __future__ import annotations

from typing import Any

#: Every table with rows keyed by (pipeline, run_id), ``recon.runs`` last.
RUN_TABLES = (
    "run_claims",
    "discrepancies",
    "latency",
    "offset_snapshots",
    "alerts",
    "repairs",
    "runs",
)
#: The tables holding where a pipeline stands.
STATE_TABLES = ("watermarks", "pipeline_state")


def reset_pipeline(pg: Any, pipeline: str) -> int:
    """Forget where the pipeline stands (watermarks, sink sequence, ledger pointer), so the next
    run starts from the beginning, as for a re-created topic. Run history is kept.

    :returns: the number of partition watermarks removed.
    """
    with pg.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"recon:run:{pipeline}",))
        cur.execute("DELETE FROM recon.watermarks WHERE pipeline = %s", (pipeline,))
        removed = int(cur.rowcount)
        cur.execute("DELETE FROM recon.pipeline_state WHERE pipeline = %s", (pipeline,))
    pg.commit()
    return removed


def forget_pipeline(pg: Any, pipeline: str) -> None:
    """Delete everything stored for a pipeline (runs, snapshots, discrepancies, latencies,
    alerts, repair plans, state): for pipelines that no longer exist, such as a test's."""
    with pg.cursor() as cur:
        delete_rows(cur, STATE_TABLES + RUN_TABLES, pipeline)
    pg.commit()


def delete_rows(
    cur: Any, tables: tuple[str, ...], pipeline: str, run_ids: list[str] | None = None
) -> int:
    """Delete the pipeline's rows from each of ``tables`` (of schema ``recon``): all of them, or
    those of ``run_ids``. The caller commits.

    :returns: the number of rows deleted from the last table.
    """
    from psycopg2 import sql

    where = "pipeline = %s" if run_ids is None else "pipeline = %s AND run_id = ANY(%s)"
    params: tuple[object, ...] = (pipeline,) if run_ids is None else (pipeline, run_ids)
    deleted = 0
    for table in tables:
        query = sql.SQL("DELETE FROM {} WHERE " + where).format(sql.Identifier("recon", table))
        cur.execute(query, params)
        deleted = int(cur.rowcount)
    return deleted
