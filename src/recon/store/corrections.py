"""Verdicts a later run proved wrong: a message judged ``lost`` whose sink row committed late.

The later run writes the message's row (``recon.model.details.LATE_DELIVERY`` in its detail); inside
that run's commit transaction the earlier ``lost`` rows get ``corrected_by_run`` and each earlier
run's ``recon.runs.corrections`` is recounted, so no verdict is corrected silently.
"""

from __future__ import annotations

import hashlib
from typing import Any


def record_corrections(cur: Any, pipeline: str, run_id: str) -> None:
    """Mark the earlier ``lost`` rows this run proved wrong (their first sink row arrived now:
    ``recon.model.details.LATE_DELIVERY``) with this run's id, and recount each earlier run's
    ``corrections``. A re-run of this run first takes its own marks back."""
    from recon.model.details import LATE_DELIVERY

    cur.execute(
        "UPDATE recon.discrepancies SET corrected_by_run = NULL "
        "WHERE pipeline = %s AND corrected_by_run = %s RETURNING run_id",
        (pipeline, run_id),
    )
    touched = {r[0] for r in cur.fetchall()}
    # The run's late deliveries first (usually none), then the earlier rows of exactly those ids.
    # One UPDATE joining the table to itself is planned from statistics that predate the rows this
    # transaction just copied in: estimated at one row, it became a nested loop comparing every
    # lost row of the pipeline with every row of the run (minutes at 3M messages, hours at 10M).
    cur.execute(
        "SELECT DISTINCT message_id FROM recon.discrepancies WHERE pipeline = %s AND run_id = %s "
        "AND detail LIKE %s AND message_id IS NOT NULL",
        (pipeline, run_id, _like_prefix(LATE_DELIVERY)),
    )
    late = [r[0] for r in cur.fetchall()]
    if late:
        cur.execute(
            "UPDATE recon.discrepancies d SET corrected_by_run = %s "
            "WHERE d.pipeline = %s AND md5(d.message_id) = ANY(%s) AND d.message_id = ANY(%s) "
            "AND d.verdict = 'lost' AND d.run_id <> %s AND d.corrected_by_run IS NULL "
            "RETURNING d.run_id",
            (run_id, pipeline, [_md5(m) for m in late], late, run_id),
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


def _md5(text: str) -> str:
    """PostgreSQL's ``md5(text)`` of an id (its UTF-8 bytes), which the results index holds."""
    return hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()


def _like_prefix(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"
