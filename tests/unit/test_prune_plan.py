"""What ``recon prune`` removes, on tiny data directories with hand-computed answers.

Each fixture is a pipeline's history as runs leave it: ``recon.runs`` rows (as
:class:`StoredRun`) and the files under ``windows/``, ``results/`` and ``ledger/``, with
modification times set to when each run wrote them. Files are never removed here: the plan is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from recon.config import load_pipelines
from recon.errors import ReconError
from recon.ledger.local import LocalEntryStore
from recon.ledger.versions import results_entry
from recon.prune import PruneError, check_data_dir, retention_start
from recon.prune.commands import parse_before
from recon.prune.plan import (
    CURRENT,
    REPAIR,
    RUNNING,
    choose_runs,
    cutoff_time,
    needed_files,
    removable_files,
)
from recon.store.prune import PipelineRuns, StoredRun

pytestmark = pytest.mark.unit

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
P = "orders"


def days_ago(n: float) -> datetime:
    return NOW - timedelta(days=n)


#: When the current run of most fixtures ended: a quarter of an hour ago.
RECENT = days_ago(0.01)


@dataclass
class History:
    """A data directory and the rows that go with it."""

    data_dir: Path
    stored: PipelineRuns

    def ledger(self, name: str) -> str:
        return str(self.data_dir / "ledger" / P / name)

    def plan(self, before: datetime) -> tuple[list[str], dict[str, str], set[str]]:
        """Removed runs, kept runs, and the removed files relative to the data directory."""
        removed, kept = choose_runs(self.stored, before)
        cutoff = cutoff_time(self.stored, before, NOW)
        found = removable_files(str(self.data_dir), P, needed_files(self.stored, removed), cutoff)
        return removed, kept, {os.path.relpath(f.path, self.data_dir) for f in found}


def _touch_tree(path: Path, when: datetime) -> None:
    for parent, dirs, files in os.walk(path):
        for name in dirs + files:
            os.utime(os.path.join(parent, name), (when.timestamp(), when.timestamp()))
    os.utime(path, (when.timestamp(), when.timestamp()))


def _folder(path: Path, when: datetime) -> str:
    path.mkdir(parents=True)
    (path / "part-00000.parquet").write_bytes(b"x" * 100)
    _touch_tree(path, when)
    return str(path)


def _manifest(history_dir: Path, name: str, entries: list[str], when: datetime) -> str:
    path = history_dir / "ledger" / P / name
    LocalEntryStore().write_manifest(str(path), entries)
    _touch_tree(path, when)
    return str(path)


def _run(run_id: str, ended: datetime, ledger: str | None, base: StoredRun | None,
         status: str = "passed") -> StoredRun:  # fmt: skip
    return StoredRun(run_id, status, ended - timedelta(minutes=1), ended, ledger,
                     base.run_id if base else None, base.ledger_path if base else None)  # fmt: skip


def _history(tmp_path: Path, *, compacted: bool, third_ended: datetime = RECENT) -> History:
    """Three runs: r1 and r2 ten and nine days ago, r3 (the current state) at ``third_ended``.
    Each run wrote its windows, its results (linked into the ledger as a ``.results`` entry),
    a delta of known messages (r2, r3) and a manifest; r3's manifest is either the chain of all
    entries or one compacted entry. An attempt of r2 that never committed left its files."""
    d = tmp_path / "data"
    when = {"r1": days_ago(10), "r2": days_ago(9), "r3": third_ended}
    for run_id, at in when.items():
        _folder(d / "windows" / P / run_id / "committed", at)
        _touch_tree(d / "windows" / P / run_id, at)
        _folder(d / "results" / P / run_id, at)
        _folder(d / "ledger" / P / f"{run_id}-0000000a.results", at)
    r1_results = results_entry(str(d / "ledger" / P / "r1-0000000a.results"), "r1")
    r2_results = results_entry(str(d / "ledger" / P / "r2-0000000a.results"), "r2")
    r3_results = results_entry(str(d / "ledger" / P / "r3-0000000a.results"), "r3")
    r2_delta = _folder(d / "ledger" / P / "r2-0000000a", when["r2"])
    _folder(d / "ledger" / P / "r2-0000000b", when["r2"])  # the attempt that never committed
    l1 = _manifest(d, "r1-0000000a.manifest", [r1_results], when["r1"])
    l2 = _manifest(d, "r2-0000000a.manifest", [r1_results, r2_results, r2_delta], when["r2"])
    if compacted:
        entries = [_folder(d / "ledger" / P / "r3-0000000a-compacted-0000000c", third_ended)]
    else:
        r3_delta = _folder(d / "ledger" / P / "r3-0000000a", third_ended)
        entries = [r1_results, r2_results, r2_delta, r3_results, r3_delta]
    l3 = _manifest(d, "r3-0000000a.manifest", entries, third_ended)
    r1 = _run("r1", when["r1"], l1, None)
    r2 = _run("r2", when["r2"], l2, r1)
    r3 = _run("r3", third_ended, l3, r2)
    return History(d, PipelineRuns(P, [r1, r2, r3], "r3", l3, frozenset()))


def test_three_runs_compacted_removes_the_two_old_runs_and_all_they_alone_need(
    tmp_path: Path,
) -> None:
    history = _history(tmp_path, compacted=True)
    removed, kept, files = history.plan(days_ago(2))
    assert removed == ["r1", "r2"]
    assert kept == {}
    # r3 started from r2: r2's results (its pending messages, carried) and the version r2 wrote
    # with every entry it lists stay, so that r3 can be run again.
    assert files == {
        "windows/orders/r1", "windows/orders/r2", "results/orders/r1",
        "ledger/orders/r1-0000000a.manifest", "ledger/orders/r2-0000000b",
    }  # fmt: skip


def test_once_no_kept_run_starts_from_them_compacted_entries_go(tmp_path: Path) -> None:
    """r4 (now current) started from r3's compacted version; r3 ended five days ago and goes
    with r1 and r2, but what r4 starts from stays: r3's version, its compacted entry, r3's
    results. Everything else goes, r3's own results entry included (its compaction folded it in;
    the run's results folder is a link of its own)."""
    history = _history(tmp_path, compacted=True, third_ended=days_ago(5))
    r3 = history.stored.runs[2]
    compacted = history.ledger("r3-0000000a-compacted-0000000c")
    l4 = _manifest(history.data_dir, "r4-0000000a.manifest", [compacted], NOW)
    r4 = _run("r4", NOW, l4, r3)
    history.stored = replace(history.stored, runs=[*history.stored.runs, r4],
                             current_run_id="r4", current_ledger=l4)  # fmt: skip
    removed, kept, files = history.plan(days_ago(1))
    assert removed == ["r1", "r2", "r3"] and kept == {}
    assert files == {
        "windows/orders/r1", "windows/orders/r2", "windows/orders/r3",
        "results/orders/r1", "results/orders/r2",
        "ledger/orders/r1-0000000a.manifest", "ledger/orders/r2-0000000a.manifest",
        "ledger/orders/r1-0000000a.results", "ledger/orders/r2-0000000a.results",
        "ledger/orders/r2-0000000a", "ledger/orders/r2-0000000b",
        "ledger/orders/r3-0000000a.results",
    }  # fmt: skip


def test_entries_a_kept_version_lists_stay_though_their_runs_go(tmp_path: Path) -> None:
    """Not compacted: the current version still lists r1's and r2's entries (their facts are
    the ledger's), so only the old manifests and the failed attempt's files go."""
    history = _history(tmp_path, compacted=False)
    removed, _, files = history.plan(days_ago(2))
    assert removed == ["r1", "r2"]
    assert files == {
        "windows/orders/r1", "windows/orders/r2", "results/orders/r1",
        "ledger/orders/r1-0000000a.manifest", "ledger/orders/r2-0000000b",
    }  # fmt: skip


def test_the_current_run_is_kept_however_old(tmp_path: Path) -> None:
    history = _history(tmp_path, compacted=True, third_ended=days_ago(5))
    removed, kept, files = history.plan(days_ago(1))
    assert removed == ["r1", "r2"] and kept == {"r3": CURRENT}
    # Of r3's, only the results entry its compaction folded in goes.
    assert {f for f in files if "r3" in f} == {"ledger/orders/r3-0000000a.results"}


def test_a_running_run_keeps_what_was_written_since_it_started(tmp_path: Path) -> None:
    """r4 started three days ago and is still running: its files are listed by no manifest yet;
    they, and anything newer than its start, stay. r2 ended before it started: it goes."""
    history = _history(tmp_path, compacted=True)
    d = history.data_dir
    r4 = StoredRun(
        "r4", "running", days_ago(3), days_ago(3), None, "r3", history.stored.current_ledger
    )
    _folder(d / "windows" / P / "r4" / "committed", days_ago(2.9))
    _folder(d / "ledger" / P / "r4-0000000a", days_ago(2.5))
    history.stored = replace(history.stored, runs=[*history.stored.runs, r4])
    removed, kept, files = history.plan(days_ago(1))
    assert removed == ["r1", "r2"] and kept == {"r4": RUNNING}
    assert "ledger/orders/r4-0000000a" not in files and "windows/orders/r4" not in files
    assert "ledger/orders/r2-0000000b" in files


def test_a_run_that_died_running_holds_the_cutoff_only_while_it_could_commit(
    tmp_path: Path,
) -> None:
    """r4 started from r2 three days ago and died running; r3 has committed since, so r4 can
    never commit (its files will never be listed) and its start no longer holds the cutoff:
    what it and the others left before the date goes. Had it started from r3, or committed
    before (a re-run of a committed run), its start would still hold the cutoff."""
    history = _history(tmp_path, compacted=True)
    d = history.data_dir
    r2 = history.stored.runs[1]
    r4 = StoredRun("r4", "running", days_ago(3), days_ago(3), None, "r2", r2.ledger_path)
    _folder(d / "windows" / P / "r4" / "committed", days_ago(2.9))
    _folder(d / "ledger" / P / "r4-0000000a", days_ago(2.5))
    _folder(d / "ledger" / P / "r3-0000000b", days_ago(2))  # a failed attempt after r4 started
    history.stored = replace(history.stored, runs=[*history.stored.runs, r4])
    removed, kept, files = history.plan(days_ago(1))
    assert removed == ["r1", "r2"] and kept == {"r4": RUNNING}
    assert {"ledger/orders/r4-0000000a", "ledger/orders/r3-0000000b"} <= files
    assert "windows/orders/r4" not in files  # the run's row stays, and so do its windows

    for could_commit in (replace(r4, base_run_id="r3"), replace(r4, ledger_path="elsewhere")):
        history.stored = replace(history.stored, runs=[*history.stored.runs[:3], could_commit])
        assert cutoff_time(history.stored, days_ago(1), NOW) == days_ago(3).timestamp()


def test_a_run_with_a_repair_not_yet_verified_is_kept(tmp_path: Path) -> None:
    history = _history(tmp_path, compacted=True)
    history.stored = replace(history.stored, live_repairs=frozenset({"r1"}))
    removed, kept, files = history.plan(days_ago(2))
    assert removed == ["r2"] and kept == {"r1": REPAIR}
    # r1 stays whole: its windows, results and the version it wrote.
    assert not {f for f in files if "r1" in f}, files


def test_a_removed_runs_repair_plan_files_go_with_it(tmp_path: Path) -> None:
    """Plan files (``repairs/<pipeline>/<plan id>.json``): r1's goes with r1, r3's stays, and a
    file no plan row names (its plan's row removed, or never recorded) goes once it is old."""
    history = _history(tmp_path, compacted=True)
    folder = history.data_dir / "repairs" / P
    folder.mkdir(parents=True)
    for name in ("p1.json", "p3.json", "stray.json"):
        (folder / name).write_text("{}")
    _touch_tree(folder, days_ago(9))
    history.stored = replace(history.stored, plans={"p1": "r1", "p3": "r3"})
    _, _, files = history.plan(days_ago(2))
    assert {f for f in files if f.startswith("repairs/")} == {
        "repairs/orders/p1.json", "repairs/orders/stray.json"
    }  # fmt: skip


def test_files_modified_after_the_date_stay(tmp_path: Path) -> None:
    """A run id used again (its windows rewritten yesterday), and a date before every run."""
    history = _history(tmp_path, compacted=True)
    _touch_tree(history.data_dir / "windows" / P / "r1", days_ago(1))
    _, _, files = history.plan(days_ago(2))
    assert "windows/orders/r1" not in files
    removed, _, files = history.plan(days_ago(20))
    assert removed == [] and files == set()


def test_a_date_in_the_future_is_now() -> None:
    stored = PipelineRuns(P, [], None, None, frozenset())
    assert cutoff_time(stored, NOW + timedelta(days=3), NOW) == NOW.timestamp()


def test_a_data_directory_elsewhere_is_refused(tmp_path: Path) -> None:
    history = _history(tmp_path, compacted=True)
    check_data_dir(P, history.stored, str(history.data_dir))
    check_data_dir(P, history.stored, f"file:{history.data_dir}/")
    with pytest.raises(PruneError, match="pipeline 'orders': its current ledger is under .*data"):
        check_data_dir(P, history.stored, str(tmp_path / "other"))
    with pytest.raises(PruneError, match="not one"):
        check_data_dir(P, history.stored, "s3a://bucket/recon")


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("2026-10-01", datetime(2026, 10, 1, tzinfo=UTC)),
        ("2026-10-01T12:00+02:00", datetime(2026, 10, 1, 10, tzinfo=UTC)),
        ("30d", NOW - timedelta(days=30)),
    ],
)
def test_before_is_a_date_a_time_or_days_ago(text: str, want: datetime) -> None:
    assert parse_before(text, NOW) == want


def test_before_that_is_no_date_is_named() -> None:
    with pytest.raises(ReconError, match="--before 'last week': not a date"):
        parse_before("last week", NOW)


def test_retention_days_set_the_date_runs_go_before() -> None:
    pipelines = load_pipelines(Path(__file__).resolve().parents[2] / "pipelines.example.yaml")
    assert retention_start(pipelines["clickstream"], NOW) == NOW - timedelta(days=90)
    assert retention_start(pipelines["payments"], NOW) is None  # declares none: keeps every run
