"""What the repair tests (``test_repair*.py``) share beside ``everyday_kit``: records without a
key, the pipeline's consumer taking the replays, the sink's rows, a ``repair:`` mapping added to
the test's pipeline, ``recon repair`` (plan, apply, list) with the test's pipeline file, and a
plan's row in ``recon.repairs``.

The ``setup`` fixture they use (a local-engine pipeline of the kit) is in ``conftest.py``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from typing import Any

import psycopg2
from confluent_kafka import Producer
from everyday_kit import EXIT_OK, REPO, Setup, consume_into_sink, no_traceback, tail

from recon.config import load_pipelines
from recon.run.steps import results_db


def produce_unkeyed(kafka_config: dict[str, str], topic: str,
                    ids: list[str]) -> dict[str, tuple[int, int]]:  # fmt: skip
    """One record per id with a null key (the messageId in header ``message_id`` and the value)
    to partition 0; ``(partition, offset)`` by messageId."""
    positions: dict[str, tuple[int, int]] = {}
    producer = Producer({**kafka_config, "acks": "all", "enable.idempotence": True})
    for mid in ids:

        def report(err: Any, msg: Any, mid: str = mid) -> None:
            assert err is None, err
            positions[mid] = (msg.partition(), msg.offset())

        producer.produce(topic, key=None, value=f'{{"id": "{mid}"}}'.encode(), partition=0,
                         headers=[("message_id", mid.encode())], on_delivery=report)  # fmt: skip
    assert producer.flush(30) == 0, "records still in flight after 30 s"
    assert sorted(positions) == sorted(ids), positions
    return positions


def declare_repair(s: Setup, **keys: Any) -> None:
    """Give the test's pipeline a ``repair:`` mapping (``max_deletes=...``, ``sink_columns=...``)
    in its YAML, and load it again."""
    s.yaml_path.write_text(s.yaml_path.read_text() + f"    repair: {json.dumps(keys)}\n")
    s.cfg = load_pipelines(s.yaml_path)[s.name]


def consume(s: Setup, kafka_config: dict[str, str], since: dict[int, int]) -> list[str]:
    """The pipeline's consumer takes every committed record from ``since`` to the end."""
    return consume_into_sink(kafka_config, s.topic, s.group, s.pg_kwargs, s.table, since)


def sink_rows(s: Setup) -> list[tuple[int, str]]:
    with psycopg2.connect(**s.pg_kwargs) as pg, pg.cursor() as cur:
        cur.execute(f"SELECT id, message_id FROM {s.table} ORDER BY id")
        rows = list(cur.fetchall())
    pg.close()
    return rows


def repair_cli(s: Setup, *args: str, own_process: bool = False) -> subprocess.CompletedProcess[str]:
    """``recon repair ARGS`` with the test's pipeline file: in this process (``recon.cli.main``,
    the command's own code, its output captured), or as its own process (``own_process``: the
    command line end to end, once per test file is enough; each costs an interpreter start)."""
    argv = ["--pipelines", str(s.yaml_path), "repair", *args]
    if own_process:
        return subprocess.run([sys.executable, "-m", "recon.cli", *argv], capture_output=True,
                              text=True, timeout=300, cwd=REPO, env=os.environ.copy())  # fmt: skip
    from recon.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return subprocess.CompletedProcess(argv, code, out.getvalue(), err.getvalue())


def plan_file(s: Setup, run_id: str, own_process: bool = False) -> tuple[str, dict[str, Any]]:
    out = os.path.join(s.data_dir, f"plan-{run_id}.json")
    result = repair_cli(s, "plan", "--pipeline", s.name, "--run-id", run_id, "--out", out,
                        own_process=own_process)  # fmt: skip
    no_traceback(result, "repair plan")
    assert result.returncode == EXIT_OK, (result.returncode, tail(result.stderr))
    with open(out, encoding="utf-8") as fh:
        return out, json.load(fh)


def apply(s: Setup, path: str, *flags: str, own_process: bool = False
          ) -> subprocess.CompletedProcess[str]:  # fmt: skip
    result = repair_cli(s, "apply", path, *flags, own_process=own_process)
    no_traceback(result, f"repair apply {' '.join(flags)}")
    return result


def repair_row(plan_id: str) -> tuple[Any, ...]:
    with results_db() as pg, pg.cursor() as cur:
        cur.execute("SELECT status, deleted, replayed, applied_by, verified_by_run, detail "
                    "FROM recon.repairs WHERE plan_id = %s", (plan_id,))  # fmt: skip
        row = cur.fetchone()
    assert row is not None, f"plan {plan_id} not in recon.repairs"
    return tuple(row)
