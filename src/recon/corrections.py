"""Verdicts a later run proved wrong: a message judged ``lost`` whose sink row committed late.

The later run writes the message's row (``recon.details.LATE_DELIVERY`` in its detail); inside
that run's commit transaction the earlier ``lost`` rows get ``corrected_by_run`` and each earlier
run's ``recon.runs.corrections`` is recounted, so no verdict is corrected silently.
"""

from __future__ import annotations

from typing import Any


def record_corrections(cur: Any, pipeline: str, run_id: str) -> None:
    """Mark the earlier ``lost`` rows this run proved wrong (their first sink row arrived now:
    ``recon.details.LATE_DELIVERY``) with this run's id, and recount each earlier run's
    ``corrections``. A re-run of this run first takes its own marks back."""
    from recon.details import LATE_DELIVERY

    cur.execute(
        "UPDATE recon.discrepancies SET corrected_by_run = NULL "
        "WHERE pipeline = %s AND corrected_by_run = %s RETURNING run_id",
        (pipeline, run_id),
    )
    touched = {r[0] for r in cur.fetchall()}
    cur.execute(
        "UPDATE recon.discrepancies d SET corrected_by_run = %s "
        "FROM recon.discrepancies n WHERE n.pipeline = %s AND n.run_id = %s "
        "AND n.detail LIKE %s AND d.pipeline = n.pipeline AND d.message_id = n.message_id "
        "AND d.verdict = 'lost' AND d.run_id <> n.run_id AND d.corrected_by_run IS NULL "
        "RETURNING d.run_id",
        (run_id, pipeline, run_id, _like_prefix(LATE_DELIVERY)),
    )
    touched |= {r[0] for r in cur.fetchall()}
    if touched:
        cur.execute(
            "UPDATE recon.runs r SET corrections = coalesce((SELECT jsonb_object_agg(verdict, n) "
            "FROM (SELECT verdict, count(*) AS n FROM recon.discrepancies d "
            "WHERE d.pipeline = r.pipeline AND d.run_id = r.run_id "
            "AND d.corrected_by_run IS NOT NULL GROUP BY verdict) c), '{}'::jsonb) "
            "WHERE r.pipeline = %s AND r.run_id = ANY(%s)",
            (pipeline, sorted(touched)),
        )


def _like_prefix(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"
