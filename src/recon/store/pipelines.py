"""Forgetting a pipeline: where it stands (after a re-created topic), or all that is stored."""

from __future__ import annotations

from typing import Any

#: Every table with rows keyed by (pipeline, run_id), ``recon.runs`` last.
RUN_TABLES = ("discrepancies", "latency", "offset_snapshots", "alerts", "repairs", "runs")
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
    from psycopg2 import sql

    with pg.cursor() as cur:
        for table in STATE_TABLES + RUN_TABLES:
            cur.execute(
                sql.SQL("DELETE FROM {} WHERE pipeline = %s").format(
                    sql.Identifier("recon", table)
                ),
                (pipeline,),
            )
    pg.commit()
