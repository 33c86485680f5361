"""``recon run --explain`` (issue 71, item 1): the run's plan as step 1 resolves it, printed
before anything runs, and nothing recorded; the run that follows takes the same windows, records
what the catalogs said with its plan, and its later steps load that plan and ask no catalog
again."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from everyday_kit import REPO, Setup, commit_group, produce, write_rows

import recon.read.sink
from recon import store
from recon.engines.plan import load_plan
from recon.read.catalog import Catalog
from recon.run.services import results_db
from recon.run.steps import snapshot_offsets

pytestmark = pytest.mark.integration


def test_explain_prints_the_plan_and_records_nothing(
    kit_setup: Callable[..., Setup], kafka_config: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    s = kit_setup("local", "explain")
    where = produce(kafka_config, s.topic, [f"m{i}" for i in range(5)])
    write_rows(s.pg_kwargs, s.table, ["m0", "m1", "m2"], where)
    commit_group(kafka_config, s.group, s.topic, {0: 3})
    command = [sys.executable, "-m", "recon.cli", "--pipelines", str(s.yaml_path), "run",
               "--pipeline", s.name, "--run-id", "r1", "--data-dir", s.data_dir,
               "--explain"]  # fmt: skip
    shown = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"pipeline {s.name}: claims exactly_once; run r1"
    assert lines[1].startswith("engine: local (DuckDB, no JVM")
    assert "state: first run" in lines
    assert any(line.startswith(f"kafka: topic {s.topic} (1 partitions") for line in lines)
    assert "  partition 0: log 0-5 (stable 5), committed 3; window [0, 3): 3 offsets" in lines, (
        lines
    )
    assert "window: 3 offsets in all" in lines
    assert any("reads rows of ingest sequence id after None up to 3" in line for line in lines)
    assert s.run_row("r1") is None, "--explain recorded a snapshot"

    # Step 1 records what the catalogs said with the plan ...
    snapshot_offsets(s.cfg, "r1")
    with results_db() as pg:
        record = store.find_run(pg, s.name, "r1")
    assert record is not None and record.catalog is not None
    recorded = Catalog.from_json(record.catalog)
    assert f"{recorded.sink.schema}.{recorded.sink.table}" == s.table
    assert recorded.sink.key_columns == ("id",)

    # ... and the steps after it load that plan: none asks a catalog again.
    def asked(*_: Any) -> Any:
        raise AssertionError("a step after the first asked the sink's catalog again")

    monkeypatch.setattr(recon.read.sink, "table_columns", asked)
    summary = s.run(None, "r1")
    assert summary.status == "passed" and summary.counts["delivered"] == 3
    assert s.run_row("r1", "status")[0] == "passed"
    monkeypatch.undo()

    # A run recorded before runs kept the catalogs' answers has them asked when it is loaded.
    with results_db() as pg, pg.cursor() as cur:
        cur.execute("UPDATE recon.runs SET catalog = NULL WHERE pipeline = %s", (s.name,))
        pg.commit()
    assert load_plan(s.cfg, "r1", data_dir=s.data_dir).catalog == recorded
