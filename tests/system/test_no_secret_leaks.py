"""Credentials come only from Airflow connections or the environment, and never show up where
people look (issue 8, security): after real DAG runs (one of them with a task SIGKILLed and
retried), no secret of the stack is in Airflow's logs, the run's XComs and rendered task fields,
the alerts (stored and delivered), recon.runs, the Data Docs or the reconciliation page.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import quote

import dagrun_kit as kit
import httpx
import pytest
from fault_runs import RetriedRun, environment_secrets
from fixtures.pipelines import DAG_DIR_PIPELINE

from recon.alert.for_run import alert_for_run
from recon.config import parse_pipelines
from recon.engine import results_db
from recon.store import forget_pipeline

pytestmark = pytest.mark.system


def _forms(secret: str) -> set[bytes]:
    """The secret as written raw, URL-quoted (a DSN) or JSON-escaped."""
    return {form.encode() for form in (secret, quote(secret, safe=""), json.dumps(secret)[1:-1])}


def find_secrets(secrets: dict[str, str], where: str, data: bytes) -> list[str]:
    return [
        f"{name} in {where}"
        for name, secret in secrets.items()
        if any(form in data for form in _forms(secret))
    ]


def _files(root: Path) -> Iterator[Path]:
    return (p for p in root.rglob("*") if p.is_file())


def _scan(secrets: dict[str, str], places: Iterable[tuple[str, bytes]]) -> tuple[int, list[str]]:
    count, found = 0, []
    for where, data in places:
        count += 1
        found += find_secrets(secrets, where, data)
    return count, found


@pytest.fixture(scope="module")
def alerted(retried_run: RetriedRun) -> Iterator[str]:
    """A run that broke its contract, alerted through the product's channels (webhook, email)
    with the connections from the environment: the retried run kept its promise, so it sent none."""
    name = f"{retried_run.pipeline}_broken"
    text = DAG_DIR_PIPELINE.format(
        name=name, engine="spark", semantics="exactly_once", schedule="null",
        topic=retried_run.truth.topic, group=retried_run.truth.consumer_group,
        table=retried_run.truth.sink_table, tolerances="{}", retries=0,
    )  # fmt: skip
    cfg = parse_pipelines(text)[name]
    try:
        run_id = "faults__broken"
        with results_db() as pg, pg.cursor() as cur:
            cur.execute(
                "INSERT INTO recon.runs (pipeline, run_id, semantics, status, started_at, "
                "finished_at, counts, contract_passed, violations) VALUES (%s, %s, "
                "'exactly_once', 'failed', now(), now(), %s, false, %s)",
                (name, run_id, json.dumps({"delivered": 9, "lost": 1}),
                 json.dumps([{"verdict": "lost", "rule": "lost", "observed": 1, "allowed": 0,
                              "reason": "exactly_once forbids lost messages"}])),
            )  # fmt: skip
            cur.execute(
                "INSERT INTO recon.discrepancies (pipeline, run_id, verdict, message_id, topic, "
                "partition, offsets, first_offset, sink_keys, sink_count) "
                "VALUES (%s, %s, 'lost', 'm-1', %s, 0, '{7}', 7, '{}', 0)",
                (name, run_id, retried_run.truth.topic),
            )
            pg.commit()
        result = alert_for_run(cfg, run_id, dag_id=f"recon_{name}")
        assert result["contract_passed"] is False and result["channels"], result
        yield name
    finally:
        with results_db() as pg:
            forget_pipeline(pg, name)


def test_the_search_finds_a_planted_secret() -> None:
    secrets = {"pg": "s3cr/et+pa ss"}
    assert find_secrets(secrets, "x", b"postgresql://u:s3cr%2Fet%2Bpa%20ss@h/db") == ["pg in x"]
    assert find_secrets(secrets, "x", b'{"password": "s3cr/et+pa ss"}') == ["pg in x"]
    assert find_secrets(secrets, "x", b"password=***") == []


def test_no_secret_in_logs_xcom_alerts_data_docs_or_the_page(
    retried_run: RetriedRun, alerted: str, airflow_url: str
) -> None:
    secrets = environment_secrets()
    r = retried_run
    home = Path(os.environ["AIRFLOW_HOME"])
    state = Path(os.environ["RECON_STATE"])
    leaks: list[str] = []

    logs = [(str(p), p.read_bytes()) for p in _files(home / "logs")]
    n, found = _scan(secrets, logs)
    leaks += found
    # The retried run's task logs are among them: both tries of the killed task.
    attempts = {
        p.name for p in (kit.task_log_dir(r.dag_id, r.run_id) / "task_id=reconcile").iterdir()
    }
    assert {"attempt=1.log", "attempt=2.log"} <= attempts, attempts

    xcoms = r.airflow.xcoms(r.dag_id, r.run_id)
    assert xcoms, "the run left no XCom to search"
    leaks += _scan(secrets, [("XCom", json.dumps(xcoms).encode())])[1]
    # The UI's task instance views, rendered templates included (spark-submit's env_vars field
    # would carry the connections if they were set before rendering).
    tis = r.airflow.task_instances(r.dag_id, r.run_id)
    assert tis["reconcile"]["rendered_fields"]["application_args"], "no rendered fields"
    leaks += _scan(secrets, [("task instances", json.dumps(tis).encode())])[1]

    rows = kit.query("SELECT row_to_json(a)::text FROM recon.alerts a")
    assert any(alerted in row[0] for row in rows), "no alert row of the broken run"
    runs = kit.query("SELECT row_to_json(r)::text FROM recon.runs r")
    tables = [
        ("recon.alerts", "\n".join(row[0] for row in rows).encode()),
        ("recon.runs", "\n".join(row[0] for row in runs).encode()),
    ]
    leaks += _scan(secrets, tables)[1]
    inbox = Path(os.environ.get("RECON_INBOX") or state / "inbox")
    leaks += (
        _scan(secrets, [(str(p), p.read_bytes()) for p in _files(inbox)])[1]
        if inbox.is_dir()
        else []
    )

    docs = [(str(p), p.read_bytes()) for p in _files(state / "gx")]
    assert any(p.endswith(".html") for p, _ in docs), "no Data Docs page to search"
    leaks += _scan(secrets, docs)[1]

    auth = {"Authorization": f"Bearer {r.airflow.token}"}
    pages = []
    with httpx.Client(base_url=airflow_url, headers=auth, timeout=30) as ui:
        for route in ("/recon/", f"/recon/?pipeline={r.pipeline}", "/recon/api/pipelines",
                      f"/recon/api/runs?pipeline={r.pipeline}",
                      f"/recon/api/discrepancies?pipeline={r.pipeline}",
                      f"/recon/?pipeline={alerted}"):  # fmt: skip
            got = ui.get(route)
            assert got.status_code == 200, f"{route}: {got.status_code} {got.text[:200]}"
            pages.append((route, got.content))
    assert r.pipeline.encode() in pages[1][1]
    leaks += _scan(secrets, pages)[1]

    assert n > 0
    assert leaks == [], "secrets leaked:\n" + "\n".join(sorted(set(leaks)))
