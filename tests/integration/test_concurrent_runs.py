"""Two runs of one pipeline started at once: only one may advance the watermarks.

A test session holds a SHARE lock on ``recon.watermarks`` until both runs have reached their
commit: the first waits at its watermark write, holding the pipeline's commit lock, the second
waits for that lock. Released, the first commits; the second finds that the pipeline moved on
since its snapshot, commits nothing and says so. Run again, it takes a fresh snapshot and judges
nothing twice: the pipeline ends as an undisturbed single run leaves it.

The race is decided by the results store, which both engines reach through the one driver of
``recon.engines.driver``: the runs use the local engine, which starts in a second where a Spark
driver takes twenty.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from faultkit import (
    recon_run,
    rerun_equals_undisturbed,
    start_recon_run,
    stored,
    synthetic,
    wait_for,
    watermark_writes_held,
)

from recon.run.steps import results_db

# It kills, restarts or locks a service every test shares: it runs alone (scripts/test.sh).
pytestmark = [pytest.mark.integration, pytest.mark.serial]

EXIT_OK, EXIT_CONTRACT_BROKEN, EXIT_ERROR = 0, 1, 2


def _both_at_commit() -> bool:
    """One backend waits at a watermark write, another for the pipeline's commit lock."""
    with results_db() as pg, pg.cursor() as cur:
        cur.execute(
            "SELECT count(*) FILTER (WHERE query LIKE 'INSERT INTO recon.watermarks%%'), "
            "count(*) FILTER (WHERE wait_event = 'advisory') FROM pg_stat_activity "
            "WHERE wait_event_type = 'Lock' AND state = 'active'"
        )
        at_watermarks, at_lock = cur.fetchone()
    return at_watermarks == 1 and at_lock == 1


def test_two_runs_at_once_one_advances(
    tmp_path: Path, kafka_config: dict[str, str], pg_kwargs: dict[str, Any]
) -> None:
    name, control = "concurrent_runs", "concurrent_runs_control"
    with synthetic(kafka_config, pg_kwargs, 3_000, name, control) as s:
        pipelines = tmp_path / "pipelines.yaml"
        pipelines.write_text(s.pipelines_yaml(name, control, engine="local"))
        data = tmp_path / "data"
        with watermark_writes_held() as blocker:
            runs = {rid: start_recon_run(pipelines, name, rid, data) for rid in ("a", "b")}
            for rid, run in runs.items():
                wait_for(f"run {rid}'s snapshot", lambda r=run: r.said("written to"),
                         alive=run)  # fmt: skip
            wait_for("both runs to reach their commit", _both_at_commit, timeout=300)
            seen = stored(name)
            assert seen.watermarks == [] and seen.discrepancies == [], "a run committed early"
            blocker.commit()
        finished = {rid: run.finish() for rid, run in runs.items()}

        codes = sorted(code for code, _ in finished.values())
        assert codes == [EXIT_CONTRACT_BROKEN, EXIT_ERROR], {r: e[-2000:] for r, (_, e) in
                                                              finished.items()}  # fmt: skip
        winner = next(r for r, (code, _) in finished.items() if code == EXIT_CONTRACT_BROKEN)
        loser = "b" if winner == "a" else "a"
        err = finished[loser][1]
        assert "Traceback" not in err, err[-3000:]
        assert (
            f"pipeline '{name}': run '{winner}' committed after run '{loser}' took its snapshot"
            in err
        ), err[-2000:]
        after_race = stored(name)
        assert {m[4] for m in after_race.watermarks} == {winner}, after_race.watermarks
        assert dict((r, st) for r, st, _ in after_race.runs) == {winner: "failed", loser: "error"}

        # The loser's re-run starts where the winner left off: nothing new, nothing judged twice.
        again = recon_run(pipelines, name, loser, data)
        assert again.returncode == EXIT_OK, again.stderr[-2000:]
        assert f"run {winner} committed after its snapshot: taking anew" in again.stderr
        assert {m[4] for m in stored(name).watermarks} == {loser}
        rerun_equals_undisturbed(pipelines, name, control, data, s.expected, rerun=None)


def test_schema_check_waits_for_no_reader() -> None:
    """A run's schema check beside another run's open read of ``recon.runs`` returns at once:
    re-applying the DDL would queue for an ACCESS EXCLUSIVE lock behind the reader, and the two
    runs deadlock when the reader then waits for the DDL's session (as two runs started at once
    did)."""
    from recon.store import ensure_schema

    with results_db() as reader, results_db() as checker:
        ensure_schema(checker)
        with reader.cursor() as cur:
            cur.execute("SELECT count(*) FROM recon.runs")  # holds ACCESS SHARE until rollback
        with checker.cursor() as cur:
            cur.execute("SET lock_timeout = '2s'")
        checker.commit()
        ensure_schema(checker)  # before the fix: LockNotAvailable after 2 s
        reader.rollback()
