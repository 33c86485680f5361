"""`recon run --pipeline NAME --json` on pipelines declared ``engine: local``: exit 0 when the
claimed contract holds, 1 when it is broken, 2 with one line and no traceback for an unknown
topic.

One synthetic topic, group and sink of the fault kit (every 20th message written twice, nothing
lost) serves two pipelines: one claims at-least-once and tolerates the duplicates, the other
claims exactly-once.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from faultkit import recon_command, synthetic
from fixtures.pipelines import SYNTHETIC_PIPELINE
from fixtures.verdicts import assert_local_layout

from recon.run.steps import results_db
from recon.store import forget_pipeline

pytestmark = pytest.mark.integration

EXIT_OK, EXIT_CONTRACT_BROKEN, EXIT_USER_ERROR = 0, 1, 2
MESSAGES, DUP_EVERY = 150, 20


def _local_block(name: str, topic: str, group: str, table: str, semantics: str) -> str:
    block = SYNTHETIC_PIPELINE.format(name=name, topic=topic, group=group, table=table,
                            kafka_conn="kafka_default", engine="local")  # fmt: skip
    tolerance = "    tolerances: {max_duplicate_ratio: 1.0}\n"
    assert "semantics: at_least_once" in block and tolerance in block
    if semantics != "at_least_once":  # only at_least_once may tolerate duplicates
        block = block.replace(tolerance, "").replace("at_least_once", semantics)
    return block


def _run(pipelines: Path, name: str, data: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(recon_command(pipelines, name, "cli-1", data),
                          capture_output=True, text=True, timeout=600)  # fmt: skip


def test_exit_status_follows_the_contract(
    tmp_path: Path, kafka_config: dict[str, str], pg_kwargs: dict[str, Any]
) -> None:
    tag = uuid.uuid4().hex[:8]
    holds, broken = f"local_cli_holds_{tag}", f"local_cli_broken_{tag}"
    with synthetic(kafka_config, pg_kwargs, MESSAGES, holds, broken, partitions=2,
                   lost_every=10**9, dup_every=DUP_EVERY) as s:  # fmt: skip
        assert s.expected == {"delivered": 143, "lost": 0, "duplicated": 7, "pending": 0}
        pipelines = tmp_path / "pipelines.yaml"
        pipelines.write_text(
            "pipelines:"
            + _local_block(holds, s.topic, s.group, s.table, "at_least_once")
            + _local_block(broken, s.topic, s.group, s.table, "exactly_once")
        )
        judged = {k: v for k, v in s.expected.items() if v}
        for name, code in ((holds, EXIT_OK), (broken, EXIT_CONTRACT_BROKEN)):
            result = _run(pipelines, name, tmp_path / "data")
            assert result.returncode == code, (name, result.stdout[-2000:], result.stderr[-3000:])
            assert "Traceback" not in result.stderr, result.stderr[-3000:]
            assert_local_layout(str(tmp_path / "data"), name, "cli-1")
            summary = json.loads(result.stdout)
            assert summary["pipeline"] == name and summary["run_id"] == "cli-1"
            assert {k: v for k, v in summary["counts"].items() if v} == judged
            assert summary["contract_passed"] is (code == EXIT_OK)
            assert summary["status"] == ("passed" if code == EXIT_OK else "failed")
            assert summary["discrepancies"] == judged["duplicated"]
            assert summary["sink_rows_scanned"] == MESSAGES + judged["duplicated"]
            with results_db() as pg, pg.cursor() as cur:
                cur.execute("SELECT status, contract_passed FROM recon.runs "
                            "WHERE pipeline = %s AND run_id = 'cli-1'", (name,))  # fmt: skip
                assert cur.fetchone() == (summary["status"], summary["contract_passed"])
        assert summary["violations"], "a broken contract names its violations"
        assert any("duplicated" in json.dumps(v) for v in summary["violations"]), summary


def test_unknown_topic_is_one_line(tmp_path: Path, pg_kwargs: dict[str, Any]) -> None:
    tag = uuid.uuid4().hex[:8]
    name, topic, table = f"local_cli_no_topic_{tag}", f"no-such-topic-{tag}", f"no_topic_{tag}"
    with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:  # the sink itself is fine
        cur.execute(f"CREATE TABLE public.{table} (id bigserial PRIMARY KEY, message_id text)")
    pipelines = tmp_path / "pipelines.yaml"
    pipelines.write_text(
        "pipelines:" + _local_block(name, topic, "g1", f"public.{table}", "exactly_once")
    )
    try:
        result = _run(pipelines, name, tmp_path / "data")
        assert result.returncode == EXIT_USER_ERROR, result.stdout + result.stderr[-3000:]
        assert "Traceback" not in result.stderr, result.stderr[-3000:]
        assert result.stdout == "", "no summary for a run that could not start"
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith("recon: error: "), lines
        for needle in (f"pipeline '{name}'", "kafka.topic", topic):
            assert needle in lines[0], lines[0]
    finally:
        with psycopg2.connect(**pg_kwargs) as pg, pg.cursor() as cur:
            cur.execute(f"DROP TABLE public.{table}")
        with results_db() as pg:
            forget_pipeline(pg, name)
