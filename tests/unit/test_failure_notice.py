"""The task-failure notice (``recon_airflow.callbacks.notify_task_failure``) leaves by the alerts'
own path: the error's first line redacted as an alert's error is (every secret Airflow's masker
knows, URLs cut to their host, control characters escaped), posted by the alerts' webhook hook,
which refuses a redirect (issue 77, finding 9). The receivers are real HTTP servers on loopback
(``fixtures.alerts``), as in ``test_alert_channels.py``."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace
from typing import Any

import pytest
from fixtures.alerts import WebhookCatcher, catching

pytestmark = pytest.mark.unit

CONN_ID = "unit_notice_webhook"
#: A password the task read (Airflow's masker knows it, as it knows every connection's).
TASK_SECRET = "db-pa55-71c0e2"
URL_SECRET = "urlpa55-9d1f"
HOOK_PASSWORD = "hook-pa55-44b7"
QUERY_TOKEN = "q5ecret-0c3d"


def _webhook(monkeypatch: pytest.MonkeyPatch, port: int) -> None:
    monkeypatch.setenv("RECON_ALERT_WEBHOOK_CONN_ID", CONN_ID)
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{CONN_ID.upper()}",
        json.dumps({"conn_type": "http", "schema": "http", "host": "127.0.0.1", "port": port,
                    "login": "hook", "password": HOOK_PASSWORD, "extra": {"endpoint": "/hook"}}),
    )  # fmt: skip


def _context(exception: BaseException) -> dict[str, Any]:
    ti = SimpleNamespace(task_id="reconcile", dag_id="recon_p1", run_id="r1", try_number=2)
    return {"ti": ti, "exception": exception}


def test_the_notice_names_the_task_and_no_secret_of_its_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from airflow.sdk.log import mask_secret

    from recon_airflow.callbacks import notify_task_failure

    mask_secret(TASK_SECRET)
    error = RuntimeError(
        f"login with {TASK_SECRET} refused by postgresql://recon:{URL_SECRET}@db.example:5432/"
        "sink\u202e\nsecond line"
    )
    hook = WebhookCatcher()
    with catching(hook) as port:
        _webhook(monkeypatch, port)
        notify_task_failure(_context(error))

    (request,) = hook.requests
    assert request["method"] == "POST" and request["path"] == "/hook"
    for secret in (TASK_SECRET, URL_SECRET, HOOK_PASSWORD):
        assert secret not in request["body"], secret
    body = json.loads(request["body"])
    text = body["text"]
    assert text.startswith("recon: task reconcile of recon_p1 failed in run r1 (try 2): login")
    assert "db.example" in text and "second line" not in text
    assert "\u202e" not in text  # escaped, as alert data is: it cannot reorder the line
    assert body["recon"] == {
        "kind": "task_failed", "dag_id": "recon_p1", "run_id": "r1", "task_id": "reconcile"
    }  # fmt: skip


@pytest.mark.parametrize("code", [302, 307])
def test_a_redirect_is_refused_and_the_notice_goes_nowhere_else(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, code: int
) -> None:
    from recon_airflow.callbacks import notify_task_failure

    elsewhere = WebhookCatcher()
    with catching(elsewhere) as other_port:
        hook = WebhookCatcher(code, f"http://localhost:{other_port}/landed?token={QUERY_TOKEN}")
        with catching(hook) as port:
            _webhook(monkeypatch, port)
            with caplog.at_level(logging.INFO, logger="recon_airflow"):
                notify_task_failure(_context(RuntimeError("boom")))  # never raises

    assert [r["method"] for r in hook.requests] == ["POST"]
    assert elsewhere.requests == []
    assert f"HTTP {code}" in caplog.text and "redirect" in caplog.text
    for secret in (HOOK_PASSWORD, QUERY_TOKEN):
        assert secret not in caplog.text


def test_without_the_connection_no_notice_is_sent(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from recon_airflow.callbacks import notify_task_failure

    monkeypatch.setenv("RECON_ALERT_WEBHOOK_CONN_ID", "unit_notice_absent")
    with caplog.at_level(logging.INFO, logger="recon_airflow"):
        notify_task_failure(_context(RuntimeError("boom")))
    assert "no failure notice sent" in caplog.text
