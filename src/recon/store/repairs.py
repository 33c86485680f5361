"""``recon.repairs``: each repair plan, where it stands, who applied it and what it changed.

A plan row is written when the plan is made (``planned``); ``recon repair apply`` moves it to
``applying`` before it touches anything and to ``applied`` when the sink changes and the replays
are done; the first reconciliation run after that which can judge it sets ``verified`` or
``failed`` (:mod:`recon.repair.verify`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

#: The states of a plan, in the order a plan goes through them; ``refused``: its first apply
#: found the sink changed since the plan and changed nothing (make a new plan).
STATUSES = ("planned", "applying", "applied", "verified", "failed", "refused")
#: States in which applying the plan again changes nothing.
DONE = ("applied", "verified", "failed", "refused")


@dataclass(frozen=True)
class RepairRow:
    """One plan's row of ``recon.repairs``."""

    plan_id: str
    pipeline: str
    run_id: str
    status: str
    plan: dict[str, Any]
    created_at: datetime
    applied_by: str | None = None
    applied_at: datetime | None = None
    replay_from: dict[str, int] | None = None
    replayed: tuple[dict[str, Any], ...] = ()
    deleted: int = 0
    verified_by_run: str | None = None
    detail: str | None = None


_COLUMNS = (
    "plan_id, pipeline, run_id, status, plan, created_at, applied_by, applied_at, replay_from, "
    "replayed, deleted, verified_by_run, detail"
)


def _row(r: tuple[Any, ...]) -> RepairRow:
    return RepairRow(
        plan_id=r[0], pipeline=r[1], run_id=r[2], status=r[3], plan=r[4], created_at=r[5],
        applied_by=r[6], applied_at=r[7], replay_from=r[8], replayed=tuple(r[9] or ()),
        deleted=int(r[10]), verified_by_run=r[11], detail=r[12],
    )  # fmt: skip


def record_plan(pg: Any, plan: dict[str, Any]) -> RepairRow:
    """Store a plan as ``planned``; a plan already stored (the same id: the same run, the same
    sink state) keeps its row and state. :returns: the plan's row."""
    with pg.cursor() as cur:
        cur.execute(
            "INSERT INTO recon.repairs (plan_id, pipeline, run_id, status, plan) "
            "VALUES (%s, %s, %s, 'planned', %s) ON CONFLICT (plan_id) DO NOTHING",
            (plan["plan_id"], plan["pipeline"], plan["run_id"], json.dumps(plan)),
        )
    pg.commit()
    found = find_repair(pg, plan["plan_id"])
    assert found is not None
    return found


def find_repair(pg: Any, plan_id: str) -> RepairRow | None:
    with pg.cursor() as cur:
        cur.execute(f"SELECT {_COLUMNS} FROM recon.repairs WHERE plan_id = %s", (plan_id,))
        row = cur.fetchone()
    pg.rollback()
    return _row(row) if row else None


def list_repairs(
    pg: Any, pipeline: str, statuses: tuple[str, ...] = STATUSES, limit: int = 50
) -> list[RepairRow]:
    """The pipeline's plans in the given states, newest first."""
    with pg.cursor() as cur:
        cur.execute(
            f"SELECT {_COLUMNS} FROM recon.repairs WHERE pipeline = %s AND status = ANY(%s) "
            "ORDER BY created_at DESC LIMIT %s",
            (pipeline, list(statuses), limit),
        )
        rows = [_row(r) for r in cur.fetchall()]
    pg.rollback()
    return rows


def mark_applying(pg: Any, plan_id: str, applied_by: str, replay_from: dict[str, int]) -> RepairRow:
    """Before the first change: the plan is ``applying`` and the replay topic's end offsets are
    kept (a second apply looks for its replays from there). Kept offsets are never replaced."""
    with pg.cursor() as cur:
        cur.execute(
            "UPDATE recon.repairs SET status = 'applying', applied_by = %s, "
            "replay_from = coalesce(replay_from, %s) WHERE plan_id = %s AND status IN "
            "('planned', 'applying')",
            (applied_by, json.dumps(replay_from), plan_id),
        )
    pg.commit()
    found = find_repair(pg, plan_id)
    assert found is not None
    return found


def claim(pg: Any, plan_id: str) -> bool:
    """Take the plan's apply lock for the session of ``pg`` (kept until it closes): one apply of
    a plan at a time, whoever starts it (a DAG run, a person). A session that dies gives the
    lock up, so an apply that crashed is finished by the next. :returns: False: another session
    holds it."""
    with pg.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (f"recon:repair:{plan_id}",))
        taken = bool(cur.fetchone()[0])
    pg.commit()  # the lock is the session's; no transaction stays open while the apply runs
    return taken


def mark_applied(
    pg: Any, plan_id: str, deleted: int, replayed: list[dict[str, Any]], detail: str | None
) -> None:
    with pg.cursor() as cur:
        cur.execute(
            "UPDATE recon.repairs SET status = 'applied', applied_at = now(), deleted = %s, "
            "replayed = %s, detail = %s WHERE plan_id = %s",
            (deleted, json.dumps(replayed), detail, plan_id),
        )
    pg.commit()


def mark_refused(pg: Any, plan_id: str, detail: str) -> None:
    """A first apply found the sink changed and changed nothing: the plan is done with."""
    with pg.cursor() as cur:
        cur.execute(
            "UPDATE recon.repairs SET status = 'refused', detail = %s WHERE plan_id = %s",
            (detail, plan_id),
        )
    pg.commit()


def mark_judged(pg: Any, plan_id: str, status: str, run_id: str, detail: str) -> None:
    """The first run that could judge an applied plan: ``verified`` or ``failed``, and why."""
    assert status in ("verified", "failed"), status
    with pg.cursor() as cur:
        cur.execute(
            "UPDATE recon.repairs SET status = %s, verified_by_run = %s, verified_at = now(), "
            "detail = %s WHERE plan_id = %s AND status = 'applied'",
            (status, run_id, detail, plan_id),
        )
    pg.commit()


def note_waiting(pg: Any, plan_id: str, detail: str) -> None:
    """An applied plan a run could not judge yet (its replays not consumed): why, kept."""
    with pg.cursor() as cur:
        cur.execute(
            "UPDATE recon.repairs SET detail = %s WHERE plan_id = %s AND status = 'applied'",
            (detail, plan_id),
        )
    pg.commit()


#: The verdicts a plan repairs: replayed (lost) or deleted from the sink (the rest).
REPLAYED_VERDICTS = ("lost",)
DELETED_VERDICTS = ("duplicated", "phantom", "aborted_read")


def latest_judged_run(pg: Any, pipeline: str) -> str | None:
    """The pipeline's newest run that committed results (passed or failed its contract)."""
    with pg.cursor() as cur:
        cur.execute(
            "SELECT run_id FROM recon.runs WHERE pipeline = %s AND status IN ('passed', 'failed') "
            "ORDER BY started_at DESC LIMIT 1",
            (pipeline,),
        )
        row = cur.fetchone()
    pg.rollback()
    return str(row[0]) if row else None


def repairable(pg: Any, pipeline: str, run_id: str) -> list[tuple[str, str, str, int, int]]:
    """The run's rows a plan repairs, not corrected by a later run: (verdict, message_id, topic,
    partition, first offset); a ``topic_duplicate``'s first offset stands for its message."""
    with pg.cursor() as cur:
        cur.execute(
            "SELECT verdict, message_id, topic, partition, "
            "coalesce(first_offset, offsets[1]) FROM recon.discrepancies "
            "WHERE pipeline = %s AND run_id = %s AND verdict = ANY(%s) "
            "AND corrected_by_run IS NULL AND message_id IS NOT NULL "
            "ORDER BY verdict, message_id",
            (pipeline, run_id, list(REPLAYED_VERDICTS + DELETED_VERDICTS)),
        )
        rows = cur.fetchall()
    pg.rollback()
    return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]


def judged_rows(
    pg: Any, pipeline: str, run_id: str, message_ids: list[str]
) -> set[tuple[str, str, int | None, int | None]]:
    """The run's rows of these messages a plan repairs, corrected later or not: (verdict,
    message_id, partition, first offset), what an apply checks a plan against."""
    with pg.cursor() as cur:
        cur.execute(
            "SELECT verdict, message_id, partition, coalesce(first_offset, offsets[1]) "
            "FROM recon.discrepancies WHERE pipeline = %s AND run_id = %s "
            "AND verdict = ANY(%s) AND message_id = ANY(%s)",
            (pipeline, run_id, list(REPLAYED_VERDICTS + DELETED_VERDICTS), message_ids),
        )
        rows = {(r[0], r[1], r[2], r[3]) for r in cur.fetchall()}
    pg.rollback()
    return rows


def replayed_positions(pg: Any, pipeline: str, topic: str) -> list[tuple[str, int, int]]:
    """``(topic, partition, offset)`` of every record the pipeline's repairs replayed to
    ``topic``: the rules' ``replays`` (a replay is not a producer's duplicate)."""
    with pg.cursor() as cur:
        cur.execute(
            "SELECT (r->>'partition')::int, (r->>'offset')::bigint FROM recon.repairs, "
            "jsonb_array_elements(replayed) r WHERE pipeline = %s "
            "AND plan->>'replay_topic' = %s AND r ? 'offset' ORDER BY 1, 2",
            (pipeline, topic),
        )
        rows = [(topic, int(p), int(o)) for p, o in cur.fetchall()]
    pg.rollback()
    return rows
