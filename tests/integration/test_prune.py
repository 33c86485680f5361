"""``recon prune`` on the real stack (local engine): three runs, the first two aged ten days,
pruned through the CLI; what the current state points at stays, and a fourth run still finds a
duplicate of a message first judged by a pruned run."""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from everyday_kit import (
    EXIT_ERROR,
    EXIT_OK,
    REPO,
    Setup,
    commit_group,
    ids,
    no_traceback,
    produce,
    tail,
    write_rows,
)

from recon.ledger.local import LocalEntryStore
from recon.ledger.versions import parse_entry
from recon.prune import apply_prune, plan_prune
from recon.prune.commands import parse_before
from recon.prune.forget import forget
from recon.run.paths import window_path
from recon.run.steps import results_db, results_path
from recon.store.prune import PruneRaced
from recon.validation import default_gx_dir

pytestmark = pytest.mark.integration

AGE = "10 days"


def _cli(s: Setup, command: str, *flags: str,
         pipelines: Path | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    """``recon <command> --pipeline NAME --data-dir ...`` with the pipeline's YAML (or
    ``pipelines``), in a process of its own."""
    argv = [sys.executable, "-m", "recon.cli", "--pipelines", str(pipelines or s.yaml_path),
            command, "--pipeline", s.name, "--data-dir", s.data_dir, *flags]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=REPO,
                          env=os.environ.copy())  # fmt: skip


def _prune(s: Setup, *flags: str) -> subprocess.CompletedProcess[str]:
    return _cli(s, "prune", *flags)


def _age(s: Setup, run_ids: list[str]) -> None:
    """As if the runs had ended ten days ago: their rows and every file written so far."""
    with results_db() as pg, pg.cursor() as cur:
        cur.execute(f"UPDATE recon.runs SET started_at = started_at - interval '{AGE}', "
                    f"finished_at = finished_at - interval '{AGE}' "
                    "WHERE pipeline = %s AND run_id = ANY(%s)", (s.name, run_ids))  # fmt: skip
        pg.commit()
    old = os.path.getmtime(s.data_dir) - 10 * 86400
    for parent, dirs, files in os.walk(s.data_dir):
        for name in dirs + files:
            os.utime(os.path.join(parent, name), (old, old))


def _rows(s: Setup, run_id: str) -> dict[str, int]:
    counts = {}
    with results_db() as pg, pg.cursor() as cur:
        for table in ("runs", "discrepancies", "offset_snapshots"):
            cur.execute(f"SELECT count(*) FROM recon.{table} WHERE pipeline = %s AND run_id = %s",
                        (s.name, run_id))  # fmt: skip
            counts[table] = cur.fetchone()[0]
    return counts


def _validations(s: Setup, run_id: str) -> list[str]:
    pattern = f"uncommitted/validations/*/{run_id}/*/*-{s.name}.json"
    return glob.glob(os.path.join(default_gx_dir(), pattern))


def _batch(s: Setup, kafka_config: dict[str, str], prefix: str, n: int,
           again: Sequence[str] = ()) -> list[str]:  # fmt: skip
    """``n`` new messages, each written once to the sink, one more row for each of ``again``;
    the group commits the end."""
    new = ids(prefix, 0, n)
    write_rows(s.pg_kwargs, s.table, new, produce(kafka_config, s.topic, new))
    write_rows(s.pg_kwargs, s.table, list(again))
    commit_group(kafka_config, s.group, s.topic)
    return new


def test_prune_removes_old_runs_and_keeps_every_ledger_fact(
    kit_setup: Callable[..., Setup], kafka_config: dict[str, str], tmp_path: Path
) -> None:
    s = kit_setup("local", "prune", semantics="at_least_once")
    first = _batch(s, kafka_config, "a", 5)
    s.run(None, "r1")
    _batch(s, kafka_config, "b", 5)
    s.run(None, "r2")
    assert _validations(s, "r1") and _validations(s, "r2")
    _age(s, ["r1", "r2"])

    # A prune planned before r3 commits removes nothing: the state it judged by has moved.
    with results_db() as pg:
        raced, stored = plan_prune(pg, s.cfg, parse_before("2d"), s.data_dir)
        assert raced.runs == ["r1"] and raced.kept == {"r2": "current state"}
        _batch(s, kafka_config, "c", 5)
        s.run(None, "r3")
        with pytest.raises(PruneRaced, match=f"pipeline '{s.name}': a run started or committed"):
            apply_prune(pg, s.cfg, raced, stored, print)
    assert _rows(s, "r1")["runs"] == 1 and all(os.path.exists(f.path) for f in raced.files)

    # User mistakes: one line each, nothing removed.
    bad = _prune(s, "--before", "yesterday")
    no_traceback(bad, "prune --before yesterday")
    assert bad.returncode == EXIT_ERROR and "--before 'yesterday': not a date" in bad.stderr
    elsewhere = _prune(s, "--before", "2d", "--data-dir", str(tmp_path / "elsewhere"))
    no_traceback(elsewhere, "prune --data-dir elsewhere")
    assert elsewhere.returncode == EXIT_ERROR, tail(elsewhere.stderr)
    assert f"pipeline '{s.name}': its current ledger is under {s.data_dir}" in elsewhere.stderr

    dry = _prune(s, "--before", "2d", "--dry-run", "--json")
    no_traceback(dry, "prune --dry-run")
    assert dry.returncode == EXIT_OK, tail(dry.stderr)
    planned = json.loads(dry.stdout)
    assert planned["runs"] == ["r1", "r2"] and planned["dry_run"] is True, planned
    assert planned["files"] and all(os.path.exists(f) for f in planned["files"]), planned
    assert _rows(s, "r1")["runs"] == 1

    done = _prune(s, "--before", "2d", "--json")
    no_traceback(done, "prune")
    assert done.returncode == EXIT_OK, tail(done.stderr)
    assert json.loads(done.stdout)["files"] == planned["files"]
    zero = {"runs": 0, "discrepancies": 0, "offset_snapshots": 0}
    assert _rows(s, "r1") == zero and _rows(s, "r2") == zero
    assert _rows(s, "r3")["runs"] == 1 and _rows(s, "r3")["offset_snapshots"] == 1
    assert not any(os.path.exists(f) for f in planned["files"])
    assert not os.path.exists(os.path.dirname(window_path(s.data_dir, s.name, "r1", "x")))
    assert not os.path.exists(results_path(s.data_dir, s.name, "r1"))
    # r3 started from r2: r2's results stay (pending messages are carried from them)
    assert os.path.isdir(results_path(s.data_dir, s.name, "r2"))
    assert not _validations(s, "r1") and not _validations(s, "r2") and _validations(s, "r3")
    current = s.ledger_path()
    assert current is not None
    for entry in LocalEntryStore().read_manifest(current):
        assert os.path.isdir(parse_entry(entry)[0]), entry

    # a0 was judged by r1, which is gone: one more sink row for it is still a duplicate.
    _batch(s, kafka_config, "d", 3, again=[first[0]])
    s.run(None, "r4")
    assert s.discrepancies("r4", "verdict, message_id, sink_count") == [("duplicated", first[0], 2)]

    again = _prune(s, "--before", "2d")
    assert again.returncode == EXIT_OK, tail(again.stderr)
    assert "removed 0 runs" in again.stdout, again.stdout

    # recon forget: refused while the pipeline is declared; once its YAML no longer declares it,
    # everything goes: rows, folders, validations, its GX objects.
    declared = _cli(s, "forget", "--yes")
    no_traceback(declared, "forget of a declared pipeline")
    assert declared.returncode == EXIT_ERROR and "is declared in" in declared.stderr
    other = REPO / "pipelines.example.yaml"
    listed = json.loads(_cli(s, "forget", "--json", pipelines=other).stdout)
    assert listed["runs"] == 2 and listed["dry_run"] is True, listed
    assert sorted(os.path.basename(os.path.dirname(f)) for f in listed["folders"]) == [
        "ledger", "results", "windows"
    ]  # fmt: skip
    assert _rows(s, "r4")["runs"] == 1 and _validations(s, "r4")
    project = Path(default_gx_dir(), "great_expectations.yml")
    assert s.name in project.read_text()  # its asset
    # In this process, which has Great Expectations loaded already (a CLI process of its own
    # would import it again: the command line is the same code, checked above up to --yes).
    gone = forget(s.name, s.data_dir)
    assert (gone.runs, gone.validations, gone.folders) == (2, 2, listed["folders"])
    assert _rows(s, "r3") == zero and _rows(s, "r4") == zero and s.ledger_path() is None
    assert not any(os.path.exists(f) for f in listed["folders"])
    assert not _validations(s, "r3") and not _validations(s, "r4")
    assert s.name not in project.read_text()
