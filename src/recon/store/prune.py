"""A pipeline's runs as ``recon prune`` needs them, and the removal of old runs' rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from recon.errors import ReconError
from recon.store.pipelines import RUN_TABLES, delete_rows

#: Repair plans still at work on their run's results (an applied one waits for its check).
LIVE_REPAIRS = ("planned", "applying", "applied")


class PruneRaced(ReconError):
    """A run of the pipeline started or committed while ``recon prune`` planned: nothing removed."""


@dataclass(frozen=True)
class StoredRun:
    """One ``recon.runs`` row, as far as what it needs goes.

    :param ended_at: when it finished (when it started, for a run that never finished).
    """

    run_id: str
    status: str
    started_at: datetime
    ended_at: datetime
    ledger_path: str | None
    base_run_id: str | None
    base_ledger_path: str | None


@dataclass(frozen=True)
class PipelineRuns:
    """Everything stored about a pipeline's runs that decides what a prune may remove.

    :param current_run_id: the run that made the pipeline's current state (None: no state).
    :param current_ledger: the current ledger version (the next run's base).
    :param live_repairs: runs with a repair plan planned, being applied, or applied and not yet
        judged by a later run.
    :param plans: the run of each of the pipeline's repair plans, by plan id.
    """

    pipeline: str
    runs: Sequence[StoredRun]
    current_run_id: str | None
    current_ledger: str | None
    live_repairs: frozenset[str]
    plans: Mapping[str, str] = field(default_factory=dict)


def read_pipeline_runs(pg: Any, pipeline: str) -> PipelineRuns:
    with pg.cursor() as cur:
        cur.execute(
            "SELECT run_id, status, started_at, coalesce(finished_at, started_at), ledger_path, "
            "base_run_id, base_ledger_path FROM recon.runs WHERE pipeline = %s "
            "ORDER BY started_at, run_id",
            (pipeline,),
        )
        runs = [StoredRun(*row) for row in cur.fetchall()]
        cur.execute(
            "SELECT run_id, ledger_path FROM recon.pipeline_state WHERE pipeline = %s", (pipeline,)
        )
        state = cur.fetchone()
        cur.execute("SELECT plan_id, run_id, status FROM recon.repairs WHERE pipeline = %s",
                    (pipeline,))  # fmt: skip
        repairs = cur.fetchall()
    pg.rollback()
    live = frozenset(run for _, run, status in repairs if status in LIVE_REPAIRS)
    return PipelineRuns(pipeline, runs, state[0] if state else None, state[1] if state else None,
                        live, {plan: run for plan, run, _ in repairs})  # fmt: skip


def delete_runs(pg: Any, planned: PipelineRuns, run_ids: Sequence[str]) -> int:
    """Delete the rows of ``run_ids`` from every table, in one transaction under the pipeline's
    run lock (the one a run's commit takes), if nothing moved since ``planned`` was read: the
    same current state, and each run still as read (not started again meanwhile).

    :returns: the number of ``recon.runs`` rows deleted.
    :raises PruneRaced: something moved; nothing was deleted.
    """
    pipeline = planned.pipeline
    if not run_ids:
        return 0
    read = {r.run_id: r for r in planned.runs}
    try:
        with pg.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"recon:run:{pipeline}",))
            cur.execute("SELECT run_id FROM recon.pipeline_state WHERE pipeline = %s", (pipeline,))
            state = cur.fetchone()
            moved = (state[0] if state else None) != planned.current_run_id
            cur.execute(
                "SELECT run_id, status, coalesce(finished_at, started_at) FROM recon.runs "
                "WHERE pipeline = %s AND run_id = ANY(%s) FOR UPDATE",
                (pipeline, list(run_ids)),
            )
            for run_id, status, ended_at in cur.fetchall():
                was = read[run_id]
                moved = moved or (status, ended_at) != (was.status, was.ended_at)
            if moved:
                raise PruneRaced(
                    f"pipeline '{pipeline}': a run started or committed while prune looked at "
                    "its runs; nothing was removed (run prune again)"
                )
            deleted = delete_rows(cur, RUN_TABLES, pipeline, list(run_ids))
        pg.commit()
    except BaseException:
        pg.rollback()
        raise
    return deleted
