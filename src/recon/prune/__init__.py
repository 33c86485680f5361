"""Removing what no run needs any more: ``recon prune --pipeline NAME --before DATE``.

A pipeline's history grows with every run: its rows in schema ``recon``, its window files (a
copy of the records read), its results, its ledger versions and its validations. A prune removes
the runs that ended before a date, and every file of the pipeline that no run left in place
needs:

1. **Runs.** Those that ended before the date go, except the run that made the pipeline's
   current state, a run still marked running, and a run with a repair plan not yet verified
   (:func:`recon.prune.plan.choose_runs`). Their rows go from every table in one transaction,
   under the lock a run's commit takes, and only if no run started or committed since they were
   read (:class:`recon.store.prune.PruneRaced` otherwise: nothing removed).
2. **What stays needed.** For each run left in place: its windows, its results and its base
   run's (the pending messages it carries), the ledger versions it started from and wrote, and
   every entry those versions list; and the current ledger version with all its entries
   (:func:`recon.prune.plan.needed_files`). A ledger entry written by a removed run stays as
   long as a kept version lists it: a ledger fact is never lost to a prune, so a duplicate of a
   message first seen long ago is still ``duplicated``. Compaction folds old entries into one,
   after which the old ones are no longer listed.
3. **Files.** Every file or folder in the pipeline's ``windows``, ``results``, ``ledger`` and
   ``repairs`` (plan files) folders that nothing above names (nor a plan row of a kept run) and
   that nothing modified after the *cutoff*: the earliest of the date, now, and the start of any
   run still running that can still commit (a run's new files are listed by no manifest until
   it commits; one that died running after a later run committed never will). This also
   sweeps what failed attempts and interrupted compactions left behind, and what an interrupted
   prune did not get to: the rows go first, so a prune cut short is finished by the next one.
4. **Validations.** The removed runs' stored GX results and Data Docs pages, and the index
   rebuilt.

It works on a data directory on this machine's file system (the one runs write to); it refuses
one whose current ledger lives elsewhere, rather than judging files it cannot see.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from recon.config import PipelineConfig
from recon.errors import ReconError
from recon.ledger.versions import local_path
from recon.prune.plan import (
    PrunePlan,
    choose_runs,
    cutoff_time,
    needed_files,
    removable_files,
    tree_stat,
)
from recon.run.paths import data_dir_of, is_local
from recon.store.prune import PipelineRuns, delete_runs, read_pipeline_runs

__all__ = [
    "PruneError", "PrunePlan", "apply_prune", "check_data_dir", "days_before", "plan_prune",
    "prune_pipeline", "retention_start",
]  # fmt: skip


class PruneError(ReconError):
    """A prune that cannot judge what it would remove: nothing was removed."""


def prune_pipeline(
    cfg: PipelineConfig,
    before: datetime,
    data_dir: str | None = None,
    *,
    dry_run: bool = False,
    progress: Callable[[str], None] = lambda _: None,
) -> PrunePlan:
    """Plan a prune of ``cfg`` and, unless ``dry_run``, apply it: ``recon prune`` and the DAG's
    ``prune`` task.

    :param data_dir: where the pipeline's runs write (default :func:`recon.settings.data_dir`).
    """
    from recon import store
    from recon.run.services import default_data_dir, results_db

    with results_db() as pg:
        store.ensure_schema(pg)
        plan, stored = plan_prune(pg, cfg, before, data_dir or default_data_dir())
        if not dry_run:
            apply_prune(pg, cfg, plan, stored, progress)
    return plan


def retention_start(cfg: PipelineConfig, now: datetime | None = None) -> datetime | None:
    """The moment before which the pipeline's ``retention_days`` lets runs go (None: it keeps
    every run)."""
    return None if cfg.retention_days is None else days_before(cfg.retention_days, now)


def days_before(days: int, now: datetime | None = None) -> datetime:
    """``days`` days before ``now`` (default: this moment, in UTC)."""
    return (now or datetime.now(UTC)) - timedelta(days=days)


def plan_prune(
    pg: object, cfg: PipelineConfig, before: datetime, data_dir: str, now: datetime | None = None
) -> tuple[PrunePlan, PipelineRuns]:
    """What a prune of ``cfg`` would remove: read only.

    :param pg: a connection to the results database.
    :param before: runs that ended before it go (an aware datetime).
    :param data_dir: where the pipeline's runs write their files.
    :raises PruneError: ``data_dir`` is not on this machine, or not the one of the pipeline's
        current ledger.
    """
    stored = read_pipeline_runs(pg, cfg.name)
    check_data_dir(cfg.name, stored, data_dir)
    removed, kept = choose_runs(stored, before)
    cutoff = cutoff_time(stored, before, now or datetime.now(UTC))
    plan = PrunePlan(cfg.name, before, cutoff, removed, kept)
    plan.files = removable_files(data_dir, cfg.name, needed_files(stored, removed), cutoff)
    return plan, stored


def apply_prune(
    pg: object,
    cfg: PipelineConfig,
    plan: PrunePlan,
    stored: PipelineRuns,
    progress: Callable[[str], None],
    gx_dir: str | None = None,
) -> None:
    """Remove what ``plan`` lists: the runs' rows, their validations, then the files.

    :raises recon.store.prune.PruneRaced: a run started or committed since ``stored`` was read.
    """
    delete_runs(pg, stored, plan.runs)
    progress(f"pipeline {cfg.name}: {len(plan.runs)} runs removed from the results database")
    if plan.runs:
        from recon.validation import forget_validations

        forget_validations(cfg, plan.runs, gx_dir)
        progress(f"pipeline {cfg.name}: their validations and Data Docs pages removed")
    removed = 0
    for removal in plan.files:
        # Modified since it was planned (a run id used again): not removed.
        if os.path.lexists(removal.path) and tree_stat(removal.path)[1] < plan.cutoff:
            _remove(removal.path)
            removed += 1
    progress(f"pipeline {cfg.name}: {removed} of {len(plan.files)} planned files and folders "
             "removed (the others changed since the plan)" if removed < len(plan.files) else
             f"pipeline {cfg.name}: {removed} files and folders removed "
             f"({plan.bytes / 1e6:.1f} MB)")  # fmt: skip


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def check_data_dir(pipeline: str, stored: PipelineRuns, data_dir: str) -> None:
    if not is_local(data_dir):
        raise PruneError(
            f"pipeline '{pipeline}': prune removes files on this machine's file system; the data "
            f"directory {data_dir} is not one"
        )
    home = data_dir_of(stored.current_ledger or "")
    here = os.path.normpath(os.path.abspath(local_path(data_dir)))
    if home is not None and (not is_local(home) or os.path.normpath(local_path(home)) != here):
        raise PruneError(
            f"pipeline '{pipeline}': its current ledger is under {home}, not under {data_dir}; "
            "pass the data directory its runs write to (--data-dir)"
        )
