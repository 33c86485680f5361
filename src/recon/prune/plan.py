"""What a prune removes: which runs (:func:`choose_runs`), which files (:func:`removable_files`).

Pure but for reading manifests and listing the pipeline's folders; nothing here removes anything.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from recon.ledger.local import LocalEntryStore
from recon.ledger.versions import local_path, parse_entry
from recon.run.paths import LEDGER, REPAIRS, RESULTS, WINDOWS, safe_name
from recon.store.commit import commit_accepted
from recon.store.prune import PipelineRuns, StoredRun

#: The data directory's folders that hold a folder per pipeline.
FOLDERS = (WINDOWS, RESULTS, LEDGER, REPAIRS)
#: Why a run older than the cutoff is kept.
CURRENT, RUNNING, REPAIR = "current state", "running", "repair plan not yet verified"


@dataclass(frozen=True)
class Removal:
    """One file or folder a prune removes, with its size and newest modification time."""

    path: str
    bytes: int
    newest: float


@dataclass
class PrunePlan:
    """What ``recon prune`` removes of one pipeline, and what it keeps of what is old.

    :param cutoff: files modified at or after it are never removed (seconds since the epoch):
        the earliest of ``--before``, the moment of planning and the start of any run still
        running, whose files no manifest lists yet.
    """

    pipeline: str
    before: datetime
    cutoff: float
    runs: list[str]
    kept: dict[str, str]
    files: list[Removal] = field(default_factory=list)

    @property
    def bytes(self) -> int:
        return sum(f.bytes for f in self.files)

    def as_dict(self) -> dict[str, object]:
        return {
            "pipeline": self.pipeline, "before": self.before.isoformat(), "runs": self.runs,
            "kept": self.kept, "files": [f.path for f in self.files], "bytes": self.bytes,
        }  # fmt: skip


def choose_runs(stored: PipelineRuns, before: datetime) -> tuple[list[str], dict[str, str]]:
    """The runs that ended before ``before`` and that nothing needs, and the old runs kept with
    the reason: the run that made the pipeline's current state (the next run starts from it, and
    a retry re-runs it), a run still running (or that died running: a re-run resumes it), a run
    with a repair plan not yet verified."""
    removed: list[str] = []
    kept: dict[str, str] = {}
    for run in stored.runs:
        if run.ended_at >= before:
            continue
        if run.run_id == stored.current_run_id:
            kept[run.run_id] = CURRENT
        elif run.status == "running":
            kept[run.run_id] = RUNNING
        elif run.run_id in stored.live_repairs:
            kept[run.run_id] = REPAIR
        else:
            removed.append(run.run_id)
    return removed, kept


def cutoff_time(stored: PipelineRuns, before: datetime, now: datetime) -> float:
    """The newest modification time a removed file may have (:class:`PrunePlan`): the start of
    a run still running counts only while the run can still commit
    (:func:`can_still_commit`). A run that died running would otherwise hold the cutoff at its
    start for good, and nothing written after it would ever be swept."""
    starts = [r.started_at for r in stored.runs
              if r.status == "running" and can_still_commit(r, stored)]  # fmt: skip
    return min([before, now, *starts]).timestamp()


def can_still_commit(run: StoredRun, stored: PipelineRuns) -> bool:
    """Whether a run's commit would be accepted now (``recon.store.commit_accepted``). A run that
    can never commit writes files that no manifest will list; a retry of it takes a new snapshot
    and a new start."""
    committed = run.ledger_path is not None
    return commit_accepted(stored.current_run_id, run.base_run_id, run.run_id, committed)


def needed_files(stored: PipelineRuns, removed: Iterable[str]) -> dict[str, set[str]]:
    """The names, per folder of the data directory, that the runs left in place need: each
    one's windows (a re-run reads them again), its results and its base run's (whose pending
    messages it carries), the ledger versions it started from and wrote, and every entry those
    versions list, and the files of its repair plans. The current ledger version and the current
    run's results are needed too."""
    gone = set(removed)
    kept = [r for r in stored.runs if r.run_id not in gone]
    results = {r.run_id for r in kept} | {r.base_run_id for r in kept if r.base_run_id}
    if stored.current_run_id:
        results.add(stored.current_run_id)
    versions = {stored.current_ledger} | {p for r in kept for p in _versions(r)}
    ledger: set[str] = set()
    store = LocalEntryStore()
    for version in filter(None, versions):
        ledger.add(os.path.normpath(local_path(version)))
        for entry in store.read_manifest(version):
            ledger.add(os.path.normpath(local_path(parse_entry(entry)[0])))
    return {
        WINDOWS: {safe_name(r.run_id) for r in kept},
        RESULTS: {safe_name(run_id) for run_id in results},
        LEDGER: {os.path.basename(p) for p in ledger},
        REPAIRS: {f"{plan}.json" for plan, run in stored.plans.items() if run not in gone},
    }


def _versions(run: StoredRun) -> list[str]:
    return [p for p in (run.ledger_path, run.base_ledger_path) if p]


def removable_files(
    data_dir: str, pipeline: str, needed: Mapping[str, set[str]], cutoff: float
) -> list[Removal]:
    """Every file or folder of the pipeline under ``data_dir`` that nothing ``needed`` names and
    that nothing modified at or after ``cutoff``: the removed runs' files (their repair plans'
    too), and what runs that never committed (or a compaction cut short) left behind."""
    found: list[Removal] = []
    for folder in FOLDERS:
        root = os.path.join(local_path(data_dir), folder, pipeline)
        try:
            names = sorted(os.listdir(root))
        except FileNotFoundError:
            continue
        for name in names:
            if name in needed[folder]:
                continue
            path = os.path.join(root, name)
            size, newest = tree_stat(path)
            if newest < cutoff:
                found.append(Removal(path, size, newest))
    return found


def tree_stat(path: str) -> tuple[int, float]:
    """Bytes and newest modification time of a file, or of a folder and all it holds."""
    info = os.lstat(path)
    size, newest = info.st_size, info.st_mtime
    if os.path.isdir(path) and not os.path.islink(path):
        for parent, dirs, files in os.walk(path):
            for name in dirs + files:
                sub = os.lstat(os.path.join(parent, name))
                newest = max(newest, sub.st_mtime)
                size += sub.st_size if name in files else 0
    return size, newest
