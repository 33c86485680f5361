"""The demo: six pipelines fed by the workload, reconciled by their Airflow DAGs.

Four keep the promise they claim (at-most-once, at-least-once, exactly-once, and at-least-once
with two writers), one claims exactly-once and breaks it, one keeps at-least-once but misses the
delivery-latency bound it declares (``late``). Runs the workload, triggers each pipeline's DAG
through Airflow's REST API, waits, and prints the verdict table and where to look.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

#: demo pipeline -> the workload scenario that feeds it (run tag "demo").
DEMO = {
    "orders_at_most_once": "at_most_once",
    "clicks_at_least_once": "at_least_once",
    "payments_exactly_once": "exactly_once_transactional_sink",
    "ledger_broken_exactly_once": "broken_exactly_once",
    "shipments_concurrent_writers": "concurrent_writers",
    "deliveries_latency_bound": "slow_consumer",
    "refunds_outbox_exactly_once": "outbox_relay",
    "stock_compacted_changelog": "compacted_changelog",
    "refunds_outbox_debezium": "outbox_debezium",
    "payments_dead_letters": "dead_letter_consumer",
    "orders_retry_topics": "retry_topic_consumer",
    "orders_fanout": "fanout_by_type",
}
#: The pipelines whose claim the demo's workload breaks: each must fail and send its alerts.
BROKEN = ("ledger_broken_exactly_once", "deliveries_latency_bound")
TAG = "demo"
TERMINAL = ("success", "failed")


def say(line: str) -> None:
    print(f"==> {line}", flush=True)


class Airflow:
    """Just enough of Airflow's REST API (v2) for the demo."""

    def __init__(self, base_url: str, username: str, password: str) -> None:
        self.base = base_url.rstrip("/")
        body = json.dumps({"username": username, "password": password}).encode()
        self.token = self._call("POST", "/auth/token", body, auth=False)["access_token"]

    def _call(self, method: str, path: str, body: bytes | None = None, auth: bool = True) -> Any:
        headers = {"Content-Type": "application/json"}
        if auth:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(self.base + path, data=body, headers=headers,
                                         method=method)  # fmt: skip
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")

    def wait_for_dag(self, dag_id: str, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._call("GET", f"/api/v2/dags/{dag_id}")
                return
            except urllib.error.HTTPError as exc:
                if exc.code != 404 or time.monotonic() > deadline:
                    raise
            time.sleep(2)

    def trigger(self, dag_id: str, run_id: str) -> None:
        self._call("PATCH", f"/api/v2/dags/{dag_id}", json.dumps({"is_paused": False}).encode())
        body = json.dumps({"dag_run_id": run_id, "logical_date": None, "conf": {}}).encode()
        self._call("POST", f"/api/v2/dags/{dag_id}/dagRuns", body)

    def state(self, dag_id: str, run_id: str) -> str:
        return str(self._call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}")["state"])


def _results(pipelines: dict[str, str]) -> list[tuple[Any, ...]]:
    from recon.run.services import results_db

    rows = []
    with results_db() as pg, pg.cursor() as cur:
        for pipeline, run_id in pipelines.items():
            cur.execute(
                "SELECT r.semantics, r.status, r.counts, r.contract_passed, "
                "(SELECT string_agg(channel || ' ' || status, ', ' ORDER BY channel) "
                " FROM recon.alerts a WHERE a.pipeline = r.pipeline AND a.run_id = r.run_id) "
                "FROM recon.runs r WHERE r.pipeline = %s AND r.run_id = %s",
                (pipeline, run_id),
            )
            row = cur.fetchone()
            rows.append((pipeline, *(row or ("?", "missing", {}, None, None))))
    return rows


def _repair_plan(pipeline: str, run_id: str) -> str | None:
    """The broken pipeline's repair plan (``recon repair plan``), printed; its file's path."""
    from recon.config import load_pipelines
    from recon.errors import ReconError
    from recon.repair.commands import summary_lines
    from recon.repair.planner import make_plan, save_plan

    try:
        plan = make_plan(load_pipelines()[pipeline], run_id)
        path = save_plan(plan)
    except ReconError as exc:
        print(f"demo: no repair plan for {pipeline}: {exc}", file=sys.stderr)
        return None
    print()
    print("\n".join(summary_lines(plan)))
    return path


def main(argv: list[str] | None = None) -> int:
    from recon import store
    from recon.config import load_pipelines
    from recon.run.services import results_db
    from recon_workload import debezium, run_scenario

    messages = int(os.environ.get("RECON_DEMO_MESSAGES", "1000"))
    pipelines = load_pipelines()
    missing = sorted(set(DEMO) - set(pipelines))
    if missing:
        print(f"demo: the pipeline file lacks {', '.join(missing)}", file=sys.stderr)
        return 2

    for pipeline, scenario in DEMO.items():
        say(f"workload {scenario} ({messages} messages) feeding pipeline {pipeline}")
        result = run_scenario(scenario, messages=messages, run_tag=TAG, progress=True)
        say(f"  ground truth: {result.summary}")
    # The Debezium connectors' replication slots keep WAL while nothing reads them: removed once
    # their topic is written (the next demo makes them again).
    debezium.remove(debezium.connectors())
    with results_db() as pg:
        store.ensure_schema(pg)
        for pipeline in DEMO:
            store.reset_pipeline(pg, pipeline)  # the demo's topics were just re-created

    airflow = Airflow(os.environ["RECON_AIRFLOW_BASE_URL"], "admin",
                      os.environ["RECON_AIRFLOW_ADMIN_PASSWORD"])  # fmt: skip
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    runs = {pipeline: f"demo__{stamp}" for pipeline in DEMO}
    for pipeline, run_id in runs.items():
        dag_id = f"recon_{pipeline}"
        airflow.wait_for_dag(dag_id)
        airflow.trigger(dag_id, run_id)
        say(f"triggered {dag_id} run {run_id}")

    started = time.monotonic()
    states = dict.fromkeys(runs, "queued")
    while any(s not in TERMINAL for s in states.values()):
        time.sleep(10)
        for pipeline, run_id in runs.items():
            if states[pipeline] not in TERMINAL:
                states[pipeline] = airflow.state(f"recon_{pipeline}", run_id)
        done = sum(s in TERMINAL for s in states.values())
        say(f"  {time.monotonic() - started:4.0f} s: {done}/{len(runs)} DAG runs finished "
            + " ".join(f"{p}={s}" for p, s in states.items()))  # fmt: skip
        if time.monotonic() - started > 1800:
            print("demo: DAG runs did not finish within 30 minutes", file=sys.stderr)
            return 1

    print()
    print(f"{'pipeline':<28} {'claims':<14} {'verdicts':<58} {'contract':<9} alerts")
    honest_ok, broken_failed = True, dict.fromkeys(BROKEN, False)
    for pipeline, semantics, status, counts, passed, alerts in _results(runs):
        shown = " ".join(f"{k}={v}" for k, v in (counts or {}).items() if v)
        verdict = "PASSED" if passed else ("FAILED" if passed is False else status.upper())
        print(f"{pipeline:<28} {semantics:<14} {shown:<58} {verdict:<9} {alerts or '-'}")
        if pipeline in BROKEN:
            broken_failed[pipeline] = passed is False and "sent" in (alerts or "")
        elif not passed:
            honest_ok = False
    planned = _repair_plan("ledger_broken_exactly_once", runs["ledger_broken_exactly_once"])
    inbox = Path(os.environ.get("RECON_INBOX", ".state/inbox"))
    received = sorted(p.name for p in inbox.glob("*")) if inbox.exists() else []
    base = os.environ["RECON_AIRFLOW_BASE_URL"]
    print()
    passwords = Path(os.environ["AIRFLOW_HOME"]) / "passwords.json"
    say(f"Airflow UI: {base}   login: admin, password in {passwords}")
    say(f"reconciliation page: {base}/recon/   (also in the UI's navigation)")
    broken = "ledger_broken_exactly_once"
    say(f"the broken pipeline's DAG run: {base}/dags/recon_{broken}/runs/{runs[broken]}")
    say(f"alert inbox: {inbox} ({len(received)} files: mail-*.eml, webhook-*.json)")
    say("results in PostgreSQL schema recon: scripts/postgres.sh psql -d recon")
    say("stop everything with: make down")
    if planned:
        say(f"its repair plan: {planned}; dry run: recon repair apply {planned} --dry-run; "
            f"on the page: {base}/recon/?pipeline={broken}")  # fmt: skip
    if not (honest_ok and all(broken_failed.values()) and planned):
        print("demo: the verdicts are not the expected ones (see above)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
