"""`recon run` on the broken exactly-once scenario: exit 1, a failed validation with its Data
Docs on disk, and exactly one email and one webhook naming the aborted reads and their positions,
delivered to a real SMTP server and HTTP receiver on loopback; the same run id again sends
nothing new."""

from __future__ import annotations

import contextlib
import email
import json
import os
import subprocess
import uuid
from pathlib import Path

import psycopg2
import pytest
from fixtures.alerts import alert_catcher, email_text
from fixtures.pipelines import WORKLOAD_PIPELINE

from recon.config.connections import postgres_connection
from recon.run.steps import results_db
from recon.store import forget_pipeline
from recon_workload import remove_run, run_scenario

pytestmark = pytest.mark.integration


def test_broken_exactly_once_fails_with_docs_and_one_alert_per_channel(tmp_path: Path) -> None:
    inbox = tmp_path / "inbox"
    catcher = contextlib.ExitStack()
    tag = uuid.uuid4().hex[:6]
    name = f"cli_broken_{tag}"
    try:
        smtp_port, http_port = catcher.enter_context(alert_catcher(inbox))
        truth = run_scenario("broken_exactly_once", messages=120, run_tag=tag, progress=False)
        assert truth.counts["aborted_read"] > 0
        pipelines = tmp_path / "pipelines.yaml"
        pipelines.write_text(
            WORKLOAD_PIPELINE.format(
                name=name,
                # The CLI, its exit codes and the alerts do not depend on the engine; a Spark run
                # through the CLI is in test_everyday_verdicts and the fault tests.
                engine="local",
                semantics="exactly_once",
                topic=truth.topic,
                group=truth.consumer_group,
                table=truth.sink_table,
                idempotent="true",
            )  # fmt: skip
        )
        env = {
            **os.environ,
            "AIRFLOW_CONN_RECON_ALERT_WEBHOOK": json.dumps({
                "conn_type": "http", "host": "127.0.0.1", "port": http_port, "schema": "http",
                "extra": {"endpoint": "/alerts"},
            }),
            "AIRFLOW_CONN_SMTP_DEFAULT": json.dumps({
                "conn_type": "smtp", "host": "127.0.0.1", "port": smtp_port,
                "extra": {"from_email": "recon@test", "to": ["oncall@test"], "disable_tls": True,
                          "disable_ssl": True},
            }),
        }  # fmt: skip
        command = [
            "recon", "--pipelines", str(pipelines), "run", "--pipeline", name,
            "--run-id", "cli-1", "--data-dir", str(tmp_path / "data"),
        ]  # fmt: skip
        first = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        assert first.returncode == 1, first.stdout + first.stderr[-3000:]
        assert "CONTRACT BROKEN" in first.stdout

        kwargs = postgres_connection("postgres_recon").psycopg2_kwargs()
        with psycopg2.connect(**kwargs) as pg, pg.cursor() as cur:
            cur.execute(
                "SELECT status, contract_passed, validation_url FROM recon.runs "
                "WHERE pipeline = %s AND run_id = 'cli-1'",
                (name,),
            )
            status, passed, url = cur.fetchone()
            cur.execute(
                "SELECT message_id, partition, offsets FROM recon.discrepancies "
                "WHERE pipeline = %s AND run_id = 'cli-1' AND verdict = 'aborted_read'",
                (name,),
            )
            aborted = cur.fetchall()
        assert (status, passed) == ("failed", False)
        assert len(aborted) == truth.counts["aborted_read"]
        docs_root = Path(os.environ["RECON_STATE"]) / "gx/uncommitted/data_docs/local_site"
        relative = url.split("/recon/docs/", 1)[1]
        from urllib.parse import unquote

        assert (docs_root / unquote(relative)).is_file(), url

        mails = sorted(inbox.glob("mail-*.eml"))
        hooks = sorted(inbox.glob("webhook-*.json"))
        assert len(mails) == 1 and len(hooks) == 1, sorted(p.name for p in inbox.iterdir())
        body = json.loads(hooks[0].read_text())["body"]
        text = json.dumps(body)
        message = email.message_from_bytes(mails[0].read_bytes())
        mail_text = email_text(message)
        for content in (text, mail_text):
            assert "aborted_read" in content and name in content
            shown = [m for m, _, _ in aborted if m in content]
            assert shown, "no aborted messageId named in the alert"
            m, partition, offsets = next(a for a in aborted if a[0] == shown[0])
            assert f"{truth.topic}/{partition}@{offsets[0]}" in content.replace("\\/", "/")

        again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        assert again.returncode == 1
        assert len(list(inbox.glob("mail-*.eml"))) == 1
        assert len(list(inbox.glob("webhook-*.json"))) == 1
    finally:
        catcher.close()
        remove_run("broken_exactly_once", tag)
        with results_db() as pg:
            forget_pipeline(pg, name)
