"""The alert channels (recon.alert.channels' rules around the providers' hooks of
recon_airflow.notifiers, through recon.alert.send.send_alerts) against receivers that misbehave
or sit beyond loopback (issue 22, security):

- an exception from the webhook's HttpHook (an invalid URL, a header with a line break) fails
  that channel only, the email still goes out, and the recorded and logged error has no token;
- a redirect is refused, so the Authorization header never goes anywhere but the configured URL;
- SMTP through SmtpHook: SMTPS by default, STARTTLS required when SMTPS is off, and no login in
  plain text to a remote host.

The webhook receivers are real HTTP servers on loopback, in this process (``fixtures.alerts``,
as in the integration tier); the SMTP server is a fake patched into ``smtplib`` (a remote host
cannot be real here); the results database is a stand-in for the psycopg2 connection that keeps
``recon.alerts`` rows in a dict (``fixtures.alerts.FakeResults``).
"""

from __future__ import annotations

import base64
import email
import json
import logging
import smtplib
from email.message import Message
from typing import Any

import pytest
from fixtures.alerts import FakeResults, WebhookCatcher, catching, lost_outcome, lost_summary

from recon.alert.send import send_alerts

pytestmark = pytest.mark.unit

TOKEN = "T0KEN-hook-5ecret-8b1d"
QUERY_TOKEN = "q5ecret-77aa21"
HOOK_PASSWORD = "hook-pa55-e3c9"
SMTP_PASSWORD = "smtp-pa55-0f2a"
WEBHOOK_ID, SMTP_ID = "unit_alert_webhook", "unit_alert_smtp"


# --- the SMTP server at the other end -----------------------------------------------------------


class FakeSmtpServer:
    """What an SMTP server sees of each session; patched into ``smtplib`` as SMTP and SMTP_SSL
    (``SmtpHook`` builds its client from them when it connects)."""

    def __init__(self, offers_starttls: bool) -> None:
        self.offers_starttls = offers_starttls
        self.sessions: list[dict[str, Any]] = []
        self.messages: list[Message] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        server = self

        class Client:
            tls_from_start = False

            def __init__(self, host: str = "", port: int = 0, **_: Any) -> None:
                self.session: dict[str, Any] = {
                    "host": host, "port": port, "tls": self.tls_from_start, "events": [],
                }  # fmt: skip
                server.sessions.append(self.session)

            def ehlo(self, name: str = "") -> tuple[int, bytes]:
                self.session["events"].append("ehlo")
                return 250, b"fake"

            def starttls(self, context: Any = None) -> tuple[int, bytes]:
                if not server.offers_starttls:
                    raise smtplib.SMTPNotSupportedError("STARTTLS extension not supported")
                self.session["events"].append("starttls")
                self.session["tls"] = True
                return 220, b"go ahead"

            def login(self, user: str, password: str, **_: Any) -> tuple[int, bytes]:
                self.session["events"].append(("login", user, password, self.session["tls"]))
                return 235, b"ok"

            def sendmail(self, from_addr: str, to_addrs: list[str], msg: str) -> dict[str, Any]:
                self.session["events"].append(("send", self.session["tls"]))
                server.messages.append(email.message_from_string(msg))
                return {}

            def close(self) -> None:
                self.session["events"].append("close")

        class SslClient(Client):
            tls_from_start = True

        monkeypatch.setattr(smtplib, "SMTP", Client)
        monkeypatch.setattr(smtplib, "SMTP_SSL", SslClient)

    def logins(self) -> list[tuple[Any, ...]]:
        return [e for s in self.sessions for e in s["events"] if e[0] == "login"]


# --- helpers ------------------------------------------------------------------------------------


def _connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, **fields: Any) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(fields))


#: SmtpHook's extras for each way of speaking to the server.
PLAIN = {"disable_ssl": True, "disable_tls": True}
STARTTLS = {"disable_ssl": True}
SMTPS = {"disable_tls": True}


def _smtp(monkeypatch: pytest.MonkeyPatch, host: str, **fields: Any) -> None:
    extra = {"from_email": "recon@example.test", "to": ["oncall@example.test"]}
    extra.update(fields.pop("extra", PLAIN))
    _connection(monkeypatch, SMTP_ID, conn_type="smtp", host=host, port=25, extra=extra, **fields)


def _send(pg: FakeResults, webhook_id: str = WEBHOOK_ID) -> dict[str, str]:
    return send_alerts(
        pg, pipeline="payments", semantics="exactly_once", run_id="r1", summary=lost_summary(),
        outcome=lost_outcome(), webhook_conn_id=webhook_id, smtp_conn_id=SMTP_ID, timeout=5.0,
    )  # fmt: skip


def _assert_no_secret(*texts: str) -> None:
    for text in texts:
        for secret in (TOKEN, QUERY_TOKEN, HOOK_PASSWORD, SMTP_PASSWORD):
            assert secret not in text, (secret, text)


# --- the webhook --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "webhook",
    [
        pytest.param(  # requests' ConnectionError quotes the path with its token
            {
                "host": "127.0.0.1",
                "port": 9,
                "extra": {"endpoint": f"/services/{TOKEN} x?token={QUERY_TOKEN}"},
            },
            id="space-in-the-path",
        ),
        pytest.param(  # the user info and the path of a whole URL in the host
            {"host": f"http://hook:{HOOK_PASSWORD}@127.0.0.1:9/services/{TOKEN}"},
            id="credentials-in-the-url",
        ),
        pytest.param(  # refused before any request: a URL where the path belongs
            {"extra": {"endpoint": f"http://hook:{HOOK_PASSWORD}@127.0.0.1/services/{TOKEN}"}},
            id="url-in-the-endpoint",
        ),
        pytest.param(  # requests: no connection adapter for the scheme
            {"host": f"file:///etc/{TOKEN}"},
            id="not-http",
        ),
        pytest.param(  # ValueError naming the header's value
            {
                "host": "127.0.0.1",
                "port": 9,
                "extra": {
                    "endpoint": "/hook",
                    "headers": {"Authorization": f"Bearer {TOKEN}\r\nX-A: 1"},
                },
            },
            id="line-break-in-a-header",
        ),
    ],
)
def test_a_webhook_that_cannot_be_sent_fails_alone_and_names_no_secret(
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    webhook: dict[str, Any],
) -> None:
    _connection(monkeypatch, WEBHOOK_ID, conn_type="http", schema="http", **webhook)
    _smtp(monkeypatch, "127.0.0.1")
    mail = FakeSmtpServer(offers_starttls=False)
    mail.install(monkeypatch)
    pg = FakeResults()

    with caplog.at_level(logging.INFO, logger="recon"):
        statuses = _send(pg)

    assert statuses == {"webhook": "failed", "email": "sent"}
    assert len(mail.messages) == 1
    error = pg.row("webhook")["error"]
    assert error and pg.row("webhook")["status"] == "failed"
    if webhook.get("port") == 9 and "headers" not in webhook["extra"]:
        assert "host='127.0.0.1', port=9" in error, error  # a plain host is no secret: named
    # the hook's own log lines too (printed by Airflow's structlog, which caplog does not see)
    printed = "".join(capfd.readouterr())
    _assert_no_secret(error, caplog.text, printed, json.dumps(list(pg.rows.values()), default=str))


@pytest.mark.parametrize("code", [301, 302, 303, 307, 308])
def test_a_redirect_is_refused_and_the_credentials_go_nowhere_else(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, code: int
) -> None:
    elsewhere = WebhookCatcher()
    with catching(elsewhere) as other_port:
        hook = WebhookCatcher(code, f"http://localhost:{other_port}/landed?token={QUERY_TOKEN}")
        with catching(hook) as port:
            _connection(
                monkeypatch, WEBHOOK_ID, conn_type="http", schema="http", host="127.0.0.1",
                port=port, login="hook", password=HOOK_PASSWORD, extra={"endpoint": "/hook"},
            )  # fmt: skip
            pg = FakeResults()
            with caplog.at_level(logging.INFO, logger="recon"):
                statuses = _send(pg)

    assert statuses["webhook"] == "failed"
    assert elsewhere.requests == []
    assert [r["method"] for r in hook.requests] == ["POST"]
    error = pg.row("webhook")["error"]
    assert f"HTTP {code}" in error and "redirect" in error
    _assert_no_secret(error, caplog.text)


def test_a_webhook_gets_slack_json_with_basic_auth(monkeypatch: pytest.MonkeyPatch) -> None:
    hook = WebhookCatcher()
    with catching(hook) as port:
        _connection(
            monkeypatch, WEBHOOK_ID, conn_type="http", schema="http", host="127.0.0.1",
            port=port, login="hook", password=HOOK_PASSWORD, extra={"endpoint": f"/h/{TOKEN}"},
        )  # fmt: skip
        pg = FakeResults()
        statuses = _send(pg, webhook_id=WEBHOOK_ID)
    assert statuses["webhook"] == "sent"
    (request,) = hook.requests
    assert request["path"] == f"/h/{TOKEN}"
    credentials = base64.b64encode(f"hook:{HOOK_PASSWORD}".encode()).decode()
    assert request["headers"]["Authorization"] == f"Basic {credentials}"
    assert "gone-9  at orders/2@5" in json.loads(request["body"])["text"]
    assert pg.row("webhook")["summary"]["target"] == {"host": "127.0.0.1", "http_status": 200}


# --- SMTP ---------------------------------------------------------------------------------------


def test_no_smtp_login_in_plain_text_to_a_remote_host(monkeypatch: pytest.MonkeyPatch) -> None:
    _smtp(monkeypatch, "mail.example.test", login="recon", password=SMTP_PASSWORD)
    mail = FakeSmtpServer(offers_starttls=False)
    mail.install(monkeypatch)
    pg = FakeResults()

    assert _send(pg, webhook_id="unit_alert_webhook_not_defined")["email"] == "failed"
    assert mail.sessions == [] and mail.messages == []
    error = pg.row("email")["error"]
    assert "mail.example.test" in error and "disable_tls" in error
    _assert_no_secret(error)


def test_a_remote_host_gets_the_login_after_starttls(monkeypatch: pytest.MonkeyPatch) -> None:
    _smtp(monkeypatch, "mail.example.test", login="recon", password=SMTP_PASSWORD, extra=STARTTLS)
    mail = FakeSmtpServer(offers_starttls=True)
    mail.install(monkeypatch)

    assert _send(FakeResults(), webhook_id="unit_alert_webhook_not_defined")["email"] == "sent"
    (session,) = mail.sessions
    assert session["events"] == [
        "starttls", "ehlo", ("login", "recon", SMTP_PASSWORD, True), ("send", True), "close",
    ]  # fmt: skip


def test_starttls_not_offered_fails_before_the_login(monkeypatch: pytest.MonkeyPatch) -> None:
    _smtp(monkeypatch, "127.0.0.1", login="recon", password=SMTP_PASSWORD, extra=STARTTLS)
    mail = FakeSmtpServer(offers_starttls=False)
    mail.install(monkeypatch)
    pg = FakeResults()

    assert _send(pg, webhook_id="unit_alert_webhook_not_defined")["email"] == "failed"
    assert mail.logins() == [] and mail.messages == []
    assert "STARTTLS" in pg.row("email")["error"]


def test_smtps_is_the_default_tls_from_the_first_byte(monkeypatch: pytest.MonkeyPatch) -> None:
    _smtp(monkeypatch, "mail.example.test", login="recon", password=SMTP_PASSWORD, extra=SMTPS)
    mail = FakeSmtpServer(offers_starttls=False)
    mail.install(monkeypatch)

    assert _send(FakeResults(), webhook_id="unit_alert_webhook_not_defined")["email"] == "sent"
    (session,) = mail.sessions
    assert session["tls"] and ("login", "recon", SMTP_PASSWORD, True) in session["events"]


@pytest.mark.parametrize(
    ("host", "extra"),
    [
        ("127.0.0.1", PLAIN),
        ("localhost", PLAIN),
        ("::1", PLAIN),
        ("mail.example.test", {**PLAIN, "allow_plaintext_auth": True}),
    ],
)
def test_a_plain_text_login_only_on_loopback_or_when_allowed(
    monkeypatch: pytest.MonkeyPatch, host: str, extra: dict[str, Any]
) -> None:
    _smtp(monkeypatch, host, login="recon", password=SMTP_PASSWORD, extra=extra)
    mail = FakeSmtpServer(offers_starttls=False)
    mail.install(monkeypatch)

    assert _send(FakeResults(), webhook_id="unit_alert_webhook_not_defined")["email"] == "sent"
    assert mail.logins() == [("login", "recon", SMTP_PASSWORD, False)]
    assert len(mail.messages) == 1


def test_the_email_is_the_alert_text_escaped_as_html_with_clean_headers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _smtp(monkeypatch, "127.0.0.1")
    mail = FakeSmtpServer(offers_starttls=False)
    mail.install(monkeypatch)
    run_id = "r1\r\nBcc: attacker@evil.example <b>x</b>"
    statuses = send_alerts(
        FakeResults(), pipeline="payments", semantics="exactly_once", run_id=run_id,
        summary=lost_summary(), outcome=lost_outcome(), smtp_conn_id=SMTP_ID,
        webhook_conn_id="unit_alert_webhook_not_defined", timeout=5.0,
    )  # fmt: skip

    assert statuses["email"] == "sent"
    (message,) = mail.messages
    assert message["Bcc"] is None and "attacker" not in str(message["To"])
    assert message["X-Recon-Pipeline"] == "payments" and "\\r\\nBcc" in message["Subject"]
    (part,) = [p for p in message.walk() if p.get_content_type() == "text/html"]
    html = part.get_payload(decode=True).decode()
    assert html.startswith("<pre") and "gone-9  at orders/2@5" in html
    assert "<b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html


# --- without Airflow ----------------------------------------------------------------------------


def test_without_a_transport_installed_each_route_is_skipped_saying_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``kafka-recon`` without its ``airflow`` extra has no provider hooks to send with."""
    import importlib.metadata

    from recon.alert import transport

    _smtp(monkeypatch, "127.0.0.1")
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **_: [])
    transport.installed_transport.cache_clear()
    pg = FakeResults()
    try:
        statuses = _send(pg)
    finally:
        transport.installed_transport.cache_clear()
    assert statuses == {"webhook": "skipped", "email": "skipped"}
    assert "pip install 'kafka-recon[airflow]'" in pg.row("email")["error"]


# --- stdout stays the CLI's ---------------------------------------------------------------------

_SEND_THEN_PRINT = """
import json, sys
sys.path.insert(0, sys.argv[1])
from fixtures.alerts import FakeResults, lost_outcome, lost_summary
from recon.alert.send import send_alerts
statuses = send_alerts(
    FakeResults(), pipeline="payments", semantics="exactly_once", run_id="r1",
    summary=lost_summary(), outcome=lost_outcome(), webhook_conn_id="unit_alert_webhook",
    smtp_conn_id="unit_alert_smtp", timeout=5.0,
)
print(json.dumps(statuses))
"""


def test_a_process_that_sends_alerts_keeps_stdout_for_its_own_output(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """Airflow, imported by the first alert of a fresh process (``recon run --json``), makes its
    loggers write to stdout: what they print while recon calls into it goes to stderr."""
    import subprocess
    import sys
    from pathlib import Path

    _connection(monkeypatch, WEBHOOK_ID, conn_type="http", host="127.0.0.1", port=9,
                extra={"endpoint": f"/services/{TOKEN}"})  # fmt: skip
    _smtp(monkeypatch, "127.0.0.1")
    monkeypatch.setenv("AIRFLOW_CONN_UNIT_ALERT_SMTP",
                       json.dumps({"conn_type": "smtp", "host": "127.0.0.1", "port": 9,
                                   "extra": {"to": ["a@b.test"], **PLAIN}}))  # fmt: skip
    tests_dir = str(Path(__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-c", _SEND_THEN_PRINT, tests_dir],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == {"webhook": "failed", "email": "failed"}, done.stdout
    _assert_no_secret(done.stdout, done.stderr)
