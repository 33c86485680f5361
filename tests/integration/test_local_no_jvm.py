"""`recon run` on an ``engine: local`` pipeline starts no JVM: not for reading, judging, nor for
the Great Expectations validation, which runs on pandas over the run's results Parquet.

The run is a process of its own session; while it runs, every process below it and every process
of its session is checked for a ``java`` argv, and after it exits its session must be empty (a
process it left behind would have been reparented, but keeps the session). The run's validation
verdict is on ``recon.runs``: decided by the checkpoint (its failures name the GX expectation),
with a Data Docs page of the pandas data source.
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faultkit import recon_command, synthetic
from fixtures.pipelines import SYNTHETIC_PIPELINE
from proc_tree import find_process

from recon.run.steps import results_db

pytestmark = pytest.mark.integration

EXIT_CONTRACT_BROKEN = 1
MESSAGES, DUP_EVERY = 120, 20
POLL_SECONDS = 0.02


def _is_java(argv: list[bytes]) -> bool:
    return any(b"java" in arg for arg in argv)


def _session_processes(session: int) -> Iterator[tuple[int, list[bytes]]]:
    """The live processes of ``session`` (field 6 of /proc/PID/stat) and their argv."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[3]) != session:
                continue
            argv = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue  # the process ended meanwhile
        if fields[0] != "Z":
            yield int(stat.parent.name), argv


def _java_in(session: int) -> list[tuple[int, list[bytes]]]:
    return [(pid, argv) for pid, argv in _session_processes(session) if _is_java(argv)]


def test_local_run_starts_no_jvm_and_records_its_validation(
    tmp_path: Path, kafka_config: dict[str, str], pg_kwargs: dict[str, Any]
) -> None:
    name = f"local_no_jvm_{uuid.uuid4().hex[:8]}"
    with synthetic(kafka_config, pg_kwargs, MESSAGES, name, partitions=2,
                   lost_every=10**9, dup_every=DUP_EVERY) as s:  # fmt: skip
        assert s.expected["duplicated"] > 0
        block = SYNTHETIC_PIPELINE.format(name=name, topic=s.topic, group=s.group, table=s.table,
                                kafka_conn="kafka_default", engine="local")  # fmt: skip
        # exactly_once forbids the duplicates: the checkpoint must say so.
        block = block.replace("    tolerances: {max_duplicate_ratio: 1.0}\n", "")
        pipelines = tmp_path / "pipelines.yaml"
        pipelines.write_text("pipelines:" + block.replace("at_least_once", "exactly_once"))

        proc = subprocess.Popen(
            recon_command(pipelines, name, "no-jvm-1", tmp_path / "data"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        )  # fmt: skip
        seen: list[Any] = []
        polls = 0
        try:
            deadline = time.monotonic() + 600
            while proc.poll() is None and time.monotonic() < deadline:
                child = find_process(proc.pid, _is_java)
                if child is not None:
                    seen.append(("descendant", child))
                seen.extend(_java_in(proc.pid))
                polls += 1
                time.sleep(POLL_SECONDS)
            stdout, stderr = proc.communicate(timeout=60)
            left = list(_session_processes(proc.pid))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

        assert polls > 10, "the run ended before it could be watched"
        assert seen == [], f"recon run started a JVM: {seen[:3]}"
        assert left == [], f"recon run left processes behind: {left}"
        assert proc.returncode == EXIT_CONTRACT_BROKEN, (stdout[-2000:], stderr[-3000:])
        summary = json.loads(stdout)
        assert summary["contract_passed"] is False and summary["status"] == "failed"

        with results_db() as pg, pg.cursor() as cur:
            cur.execute(
                "SELECT status, contract_passed, validation_url, violations FROM recon.runs "
                "WHERE pipeline = %s AND run_id = 'no-jvm-1'",
                (name,),
            )
            status, passed, url, violations = cur.fetchone()
        assert (status, passed) == ("failed", False)
        # The checkpoint's decision (its failures name the expectation), on the pandas source.
        assert url and f"recon_results_pandas-{name}" in url, url
        assert [(v["rule"], v["expectation"], v["observed"]) for v in violations] == [
            ("duplicated_forbidden", "expect_column_values_to_not_be_in_set",
             s.expected["duplicated"])
        ]  # fmt: skip
