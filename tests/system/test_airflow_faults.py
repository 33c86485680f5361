"""One reconciliation DAG run under the real scheduler, its ``reconcile`` task SIGKILLed mid-step
and retried, then cleared (issue 8's fault matrix, Airflow rows), and what it leaves behind.

Each re-run: nothing partial is visible, watermarks advance only with their results, verdicts equal
the workload's ground truth, nothing is counted twice. Behind it (security): no socket beyond
loopback while it ran, and no secret of the stack in Airflow's logs, the run's XComs and rendered
task fields, the alerts (stored and delivered), recon.runs, the Data Docs or the reconciliation
page. The tests share the one run (``fault_runs.retried_run``), so they live in one file: the
tier's two workers get whole files, and a second worker would make a second run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import dagrun_kit as kit
import httpx
import pytest
from confluent_kafka import Producer
from fault_runs import KILLED_TASK, RetriedRun, environment_secrets, group_offsets
from fixtures.alerts import alert_catcher
from fixtures.pipelines import DAG_DIR_PIPELINE
from secret_search import files_under, find_secrets, scan

from recon.alert.for_run import alert_for_run
from recon.config import parse_pipelines
from recon.run.steps import results_db
from recon.store import forget_pipeline
from recon_workload.kafka_io import alter_offsets, base_config

pytestmark = pytest.mark.system

TASKS = ("snapshot_offsets", "snapshot_topic", "reconcile", "validate", "alert")


def test_retried_task_commits_once_with_the_undisturbed_verdicts(retried_run: RetriedRun) -> None:
    r = retried_run
    assert r.killed_pids, "no process was killed"
    # Between the kill and the retry: the run is not finished and nothing of it is visible.
    seen = r.after_kill
    assert seen["runs"][r.run_id]["status"] == "running"
    assert not seen["runs"][r.run_id]["counts"]
    assert (seen["watermarks"], seen["state"], seen["discrepancies"]) == ({}, [], [])
    assert seen["ti"]["try_number"] == 1

    tis = r.airflow.task_instances(r.dag_id, r.run_id)
    assert {t: ti["state"] for t, ti in tis.items()} == dict.fromkeys(TASKS, "success")
    assert tis[KILLED_TASK]["try_number"] == 2, "the killed task was not retried"

    runs = kit.runs(r.pipeline)
    assert list(runs) == [r.run_id]
    assert (runs[r.run_id]["status"], runs[r.run_id]["contract_passed"]) == ("passed", True)
    assert kit.judged(runs[r.run_id]["counts"]) == kit.judged(r.truth.counts)

    rows = kit.discrepancies(r.pipeline)
    assert len({row[2] for row in rows}) == len(rows), "a message has two discrepancy rows"
    assert sum(row[1] == "duplicated" for row in rows) == r.truth.counts["duplicated"]

    ends = group_offsets(r.truth)
    assert {p: w[1] for p, w in kit.windows(r.pipeline, r.run_id).items()} == ends
    assert kit.watermarks(r.pipeline) == {p: (end, r.run_id) for p, end in ends.items()}


def _add_committed_records(r: RetriedRun, per_partition: int = 3) -> dict[int, int]:
    """Records the consumer group has claimed since the run (offsets moved on, no sink rows):
    a run that took a new snapshot would judge them ``lost`` and move its watermarks."""
    ends = group_offsets(r.truth)
    producer = Producer(base_config())
    for partition in ends:
        for n in range(per_partition):
            producer.produce(
                r.truth.topic, value=b"{}", partition=partition,
                headers=[("message_id", f"late-{partition}-{n}".encode())],
            )  # fmt: skip
    assert producer.flush(30) == 0, "records not delivered to Kafka"
    moved = {p: end + per_partition for p, end in ends.items()}
    alter_offsets(
        base_config(), r.truth.consumer_group, {(r.truth.topic, p): o for p, o in moved.items()}
    )
    assert group_offsets(r.truth) == moved
    return moved


def test_cleared_run_replaces_its_results_and_keeps_its_window(retried_run: RetriedRun) -> None:
    r = retried_run
    before = (kit.runs(r.pipeline), kit.discrepancies(r.pipeline), kit.watermarks(r.pipeline))
    tries = {t: ti["try_number"] for t, ti in r.airflow.task_instances(r.dag_id, r.run_id).items()}
    moved = _add_committed_records(r)

    cleared = r.airflow.call(
        "POST", f"/dags/{r.dag_id}/clearTaskInstances",
        json={"dry_run": False, "dag_run_id": r.run_id, "only_failed": False,
              "reset_dag_runs": True},
    )  # fmt: skip
    assert sorted(ti["task_id"] for ti in cleared["task_instances"]) == sorted(TASKS)
    assert r.airflow.run(r.dag_id, r.run_id)["state"] in ("queued", "running")
    final = r.airflow.wait_run(r.dag_id, r.run_id, timeout=600)
    assert final["state"] == "success", f"see {kit.task_log_dir(r.dag_id, r.run_id)}"

    tis = r.airflow.task_instances(r.dag_id, r.run_id)
    assert {t: ti["try_number"] for t, ti in tis.items()} == {t: n + 1 for t, n in tries.items()}
    runs, rows, marks = (
        kit.runs(r.pipeline),
        kit.discrepancies(r.pipeline),
        kit.watermarks(r.pipeline),
    )
    assert list(runs) == [r.run_id], "the cleared run made a second recon run"
    assert runs[r.run_id]["finished_at"] > before[0][r.run_id]["finished_at"], "not re-committed"
    assert runs[r.run_id]["counts"] == before[0][r.run_id]["counts"]
    assert rows == before[1], "results were added to or changed, not replaced"
    # Same snapshot, same watermarks: the records added since are left for the next run.
    assert marks == before[2]
    assert all(marks[p][0] < moved[p] for p in moved)


def test_nothing_listens_beyond_loopback_during_a_dag_run(retried_run: RetriedRun) -> None:
    """Every socket the project's processes listened on while the DAG run (its spark-submit
    steps, the scheduler's workers, the retry) went on was bound to loopback: no Spark UI on
    ``*:4040``, no Airflow log server on ``0.0.0.0:8793``."""
    assert retried_run.listings > 10, "the sockets were hardly listed during the run"
    assert retried_run.exposed == [], "\n".join(retried_run.exposed)


# --- what the run left behind: no secret anywhere people look ---------------------------------


#: The alert connections the broken run sends with, and a webhook whose secrets are its basic-auth
#: password and the token in its path (both searched for by the secret test).
ALERT_VARS = ("AIRFLOW_CONN_RECON_ALERT_WEBHOOK", "AIRFLOW_CONN_SMTP_DEFAULT")
WEBHOOK_PASSWORD, WEBHOOK_TOKEN = "hook-pa55-4e1b9c07", "T0KEN-in-the-path-6f2d81a3"


@contextmanager
def alert_connections(inbox: Path) -> Iterator[None]:
    """The project's catcher storing into ``inbox``, and the alert connections pointing at it
    (restored after)."""
    saved = {name: os.environ.get(name) for name in ALERT_VARS}
    try:
        with alert_catcher(inbox) as (smtp_port, http_port):
            os.environ[ALERT_VARS[0]] = json.dumps({
                "conn_type": "http", "host": "127.0.0.1", "port": http_port,
                "login": "recon-alerts", "password": WEBHOOK_PASSWORD,
                "extra": {"endpoint": f"/hooks/{WEBHOOK_TOKEN}"},
            })  # fmt: skip
            os.environ[ALERT_VARS[1]] = json.dumps({
                "conn_type": "smtp", "host": "127.0.0.1", "port": smtp_port,
                "extra": {"from_email": "recon@localhost", "to": ["oncall@localhost"],
                          "disable_ssl": True, "disable_tls": True},
            })  # fmt: skip
            yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(scope="module")
def alerted(retried_run: RetriedRun) -> Iterator[str]:
    """A run that broke its contract, alerted through the product's channels (webhook, email:
    the providers' hooks) to a catcher whose inbox the secret search reads: the retried run kept
    its promise, so it sent none."""
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
        inbox = Path(os.environ.get("RECON_INBOX") or Path(os.environ["RECON_STATE"]) / "inbox")
        inbox.mkdir(parents=True, exist_ok=True)
        with alert_connections(inbox):
            result = alert_for_run(cfg, run_id, dag_id=f"recon_{name}")
            assert result["contract_passed"] is False, result
            assert result["channels"] == {"webhook": "sent", "email": "sent"}, result
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

    logs = [(str(p), p.read_bytes()) for p in files_under(home / "logs")]
    n, found = scan(secrets, logs)
    leaks += found
    # The retried run's task logs are among them: both tries of the killed task.
    attempts = {
        p.name for p in (kit.task_log_dir(r.dag_id, r.run_id) / "task_id=reconcile").iterdir()
    }
    assert {"attempt=1.log", "attempt=2.log"} <= attempts, attempts

    xcoms = r.airflow.xcoms(r.dag_id, r.run_id)
    assert xcoms, "the run left no XCom to search"
    leaks += scan(secrets, [("XCom", json.dumps(xcoms).encode())])[1]
    # The UI's task instance views, rendered templates included (spark-submit's env_vars field
    # would carry the connections if they were set before rendering).
    tis = r.airflow.task_instances(r.dag_id, r.run_id)
    assert tis["reconcile"]["rendered_fields"]["application_args"], "no rendered fields"
    leaks += scan(secrets, [("task instances", json.dumps(tis).encode())])[1]

    rows = kit.query("SELECT row_to_json(a)::text FROM recon.alerts a")
    assert any(alerted in row[0] for row in rows), "no alert row of the broken run"
    runs = kit.query("SELECT row_to_json(r)::text FROM recon.runs r")
    tables = [
        ("recon.alerts", "\n".join(row[0] for row in rows).encode()),
        ("recon.runs", "\n".join(row[0] for row in runs).encode()),
    ]
    leaks += scan(secrets, tables)[1]
    inbox = Path(os.environ.get("RECON_INBOX") or state / "inbox")
    received = [(str(p), _as_sent(p)) for p in files_under(inbox)] if inbox.is_dir() else []
    assert any(alerted.encode() in body for _, body in received), "no alert of the run received"
    assert {WEBHOOK_PASSWORD, WEBHOOK_TOKEN} <= set(secrets.values()), "the webhook's not searched"
    leaks += scan(secrets, received)[1]

    docs = [(str(p), p.read_bytes()) for p in files_under(state / "gx")]
    assert any(p.endswith(".html") for p, _ in docs), "no Data Docs page to search"
    leaks += scan(secrets, docs)[1]

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
    leaks += scan(secrets, pages)[1]

    assert n > 0
    assert leaks == [], "secrets leaked:\n" + "\n".join(sorted(set(leaks)))


def _as_sent(path: Path) -> bytes:
    """What a receiver was sent: a webhook record without the path the catcher noted (a
    webhook's token is its path, which the receiver knows); an email as received."""
    if path.name.startswith("webhook-") and path.suffix == ".json":
        return json.dumps(json.loads(path.read_text())["body"]).encode()
    return path.read_bytes()
