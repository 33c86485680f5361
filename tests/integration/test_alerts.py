"""Alerts end to end: a broken run validated by the real checkpoint on Spark, then delivered to a
real SMTP server and a real HTTP receiver on loopback, recorded in the real results database,
and never delivered twice.

Only configuration is set here (the two alert connections, the Airflow base URL): no mocks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from email import message_from_bytes
from email.message import Message
from typing import Any

import pytest
from fixtures.alerts import (
    WebhookCatcher,
    catching,
    email_text,
    free_port,
    lost_outcome,
    lost_summary,
    stored_alerts,
)

from recon.config import KafkaSource, MessageIdSpec, PipelineConfig, SinkSpec, Tolerances

pytestmark = [
    pytest.mark.integration,
    # The test server demands a login without TLS: loopback only, on purpose.
    pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS:UserWarning"),
]

TOPIC = "orders"
SMTP_LOGIN, SMTP_PASSWORD = "recon-alerts", "smtp-pw-7c1f9e"
WEBHOOK_TOKEN = "hook-token-93ad"
PAYLOAD = "PAYLOAD-SENTINEL-amount=4711"


# --- the receivers ------------------------------------------------------------------------------


class Mailbox:
    def __init__(self) -> None:
        self.messages: list[tuple[str, list[str], Message]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        raw = envelope.original_content or envelope.content
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), message_from_bytes(raw)))
        return "250 Message accepted"


def _authenticator(server: Any, session: Any, envelope: Any, mechanism: str, auth: Any) -> Any:
    from aiosmtpd.smtp import AuthResult, LoginPassword

    ok = isinstance(auth, LoginPassword) and (auth.login, auth.password) == (
        SMTP_LOGIN.encode(),
        SMTP_PASSWORD.encode(),
    )
    return AuthResult(success=ok, handled=False)


@pytest.fixture
def smtp_server() -> Iterator[tuple[Mailbox, int]]:
    from aiosmtpd.controller import Controller

    mailbox = Mailbox()
    port = free_port()
    controller = Controller(
        mailbox,
        hostname="127.0.0.1",
        port=port,
        auth_required=True,
        auth_require_tls=False,  # loopback only; the server still demands the login
        authenticator=_authenticator,
    )
    controller.start()
    try:
        yield mailbox, port
    finally:
        controller.stop()


@pytest.fixture
def http_receiver() -> Iterator[tuple[WebhookCatcher, int]]:
    hooks = WebhookCatcher()
    with catching(hooks) as port:
        yield hooks, port


@pytest.fixture
def alert_connections(
    monkeypatch: pytest.MonkeyPatch,
    smtp_server: tuple[Mailbox, int],
    http_receiver: tuple[WebhookCatcher, int],
) -> None:
    _, smtp_port = smtp_server
    _, http_port = http_receiver
    webhook = {
        "conn_type": "http",
        "host": "127.0.0.1",
        "port": http_port,
        "schema": "http",
        "extra": {"endpoint": f"/hook/{WEBHOOK_TOKEN}"},
    }
    smtp = {
        "conn_type": "smtp",
        "host": "127.0.0.1",
        "port": smtp_port,
        "login": SMTP_LOGIN,
        "password": SMTP_PASSWORD,
        # SmtpHook speaks SMTPS unless told otherwise; the test server is plain, on loopback.
        "extra": {
            "from_email": "recon@example.test", "to": ["oncall@example.test"],
            "disable_ssl": True, "disable_tls": True,
        },
    }  # fmt: skip
    monkeypatch.setenv("AIRFLOW_CONN_RECON_ALERT_WEBHOOK", json.dumps(webhook))
    monkeypatch.setenv("AIRFLOW_CONN_SMTP_DEFAULT", json.dumps(smtp))
    monkeypatch.setenv("RECON_AIRFLOW_BASE_URL", "http://127.0.0.1:23080/")


# --- a broken exactly-once run ------------------------------------------------------------------

# (verdict, message_id, partition, offsets, sink_keys, sink_count, topic_duplicate)
BROKEN = [
    *[("delivered", f"ok-{i}", i % 2, [i], [f"s{i}"], 1, False) for i in range(6)],
    ("delivered", "retry-1", 0, [40, 41], ["s40"], 1, True),
    ("lost", "gone-1", 1, [17], [], 0, False),
    ("duplicated", "twice-1", 0, [18], ["s18", "s19"], 2, False),
    ("aborted_read", "abort-1", 1, [25], ["s25"], 1, False),
    ("aborted_read", "abort-2", 1, [26], ["s26"], 1, False),
    ("phantom", "ghost-1", None, [], ["s90"], 1, False),
    ("pending", "late-1", 0, [60], [], 0, False),
]


def _result_rows() -> list[tuple[Any, ...]]:
    rows = []
    for verdict, mid, partition, offsets, keys, count, dup in BROKEN:
        positions = [(TOPIC, partition, o) for o in offsets] if partition is not None else []
        rows.append(
            (
                verdict, mid, TOPIC if partition is not None else None, partition, offsets,
                offsets[0] if offsets else None, count, keys, dup, None, positions,
                None, None, None, None,  # latency_ms, record_time_ms, sink_time_ms, committed_seen
            )
        )  # fmt: skip
    return rows


def _summary() -> dict[str, Any]:
    """What the engine's RunSummary holds for these results (counts, samples per verdict)."""
    counts: dict[str, int] = {}
    samples: dict[str, list[dict[str, Any]]] = {}
    for verdict, mid, partition, offsets, keys, count, dup in BROKEN:
        counts[verdict] = counts.get(verdict, 0) + 1
        sample = {
            "message_id": mid, "topic": TOPIC if partition is not None else None,
            "partition": partition, "offsets": offsets, "sink_keys": keys, "sink_count": count,
            # A careless caller's extra field: alerts must render whitelisted fields only.
            "value": PAYLOAD,
        }  # fmt: skip
        if verdict != "delivered":
            samples.setdefault(verdict, []).append(sample)
        if dup:
            counts["topic_duplicate"] = counts.get("topic_duplicate", 0) + 1
            samples.setdefault("topic_duplicate", []).append(sample)
    return {"pipeline": "x", "counts": counts, "samples": samples}


def _cfg(name: str) -> PipelineConfig:
    return PipelineConfig(
        name=name,
        semantics="exactly_once",
        schedule=None,
        settle_seconds=0,
        kafka=KafkaSource("kafka_default", TOPIC, "orders-sink", MessageIdSpec("header", "id")),
        sink=SinkSpec("postgres_sink", "public.orders", "message_id"),
        tolerances=Tolerances(),
        idempotent_producer=True,
    )


def test_broken_run_alerts_once_by_email_and_webhook(
    spark: Any,
    tmp_path: Any,
    results_pg: Any,
    pipeline: str,
    alert_connections: None,
    smtp_server: tuple[Mailbox, int],
    http_receiver: tuple[WebhookCatcher, int],
) -> None:
    from recon.alert.send import send_alerts
    from recon.model import schemas
    from recon.validation import validate_run

    mailbox, _ = smtp_server
    hooks, _ = http_receiver
    run_id = "scheduled__2026-03-01T00:00:00+00:00"
    results = spark.createDataFrame(_result_rows(), schemas.RESULT)
    outcome = validate_run(spark, results, _cfg(pipeline), run_id, gx_dir=str(tmp_path / "gx"))
    assert not outcome.passed
    assert {f["verdict"]: f["observed"] for f in outcome.failures} == {
        "lost": 1, "duplicated": 1, "phantom": 1, "aborted_read": 2, "topic_duplicate": 1,
    }  # fmt: skip

    statuses = send_alerts(
        results_pg, pipeline=pipeline, semantics="exactly_once", run_id=run_id,
        summary=_summary(), outcome=outcome,
    )  # fmt: skip

    assert statuses == {"webhook": "sent", "email": "sent"}
    assert len(mailbox.messages) == 1
    assert len(hooks.requests) == 1

    # the email
    mail_from, rcpt_tos, mail = mailbox.messages[0]
    assert (mail_from, rcpt_tos) == ("recon@example.test", ["oncall@example.test"])
    assert pipeline in mail["Subject"] and "exactly_once" in mail["Subject"]
    body = email_text(mail)
    # the webhook: Slack-compatible JSON on the configured endpoint
    request = hooks.requests[0]
    assert request["path"] == f"/hook/{WEBHOOK_TOKEN}"
    assert request["headers"]["Content-Type"].startswith("application/json")
    payload = json.loads(request["body"])
    assert set(payload) == {"text", "blocks"}
    assert payload["blocks"][0]["type"] == "header"
    assert pipeline in payload["blocks"][0]["text"]["text"]
    blocks_text = json.dumps(payload["blocks"])

    for text in (body, payload["text"], blocks_text):
        assert pipeline in text and "exactly_once" in text and run_id in text
        # counts per violating verdict
        for line in ("aborted_read: 2", "lost: 1", "duplicated: 1", "phantom: 1"):
            assert line in text, line
        assert "topic_duplicate: 1" in text
        # sample message ids with their positions
        assert "abort-1  at orders/1@25" in text and "abort-2  at orders/1@26" in text
        assert "gone-1  at orders/1@17" in text
        assert "retry-1  at orders/0@40,41" in text
        # repair hints
        assert "replay these committed records to the sink: orders/1 offset 17" in text
        assert "twice-1: delete s19 (keep s18)" in text
        assert "aborted producer transactions reached the sink, at orders/1 offsets 25-26" in text
        assert "investigate sink keys s90" in text
        # links to the run and the Data Docs
        assert "http://127.0.0.1:23080/dags/" + pipeline + "/runs/scheduled__2026-03-01T00" in text
        assert outcome.data_docs_path.split("/")[-1] in text
        # no payloads, no credentials, no delivered messages
        for secret in (PAYLOAD, SMTP_PASSWORD, WEBHOOK_TOKEN, "ok-1"):
            assert secret not in text, secret

    # recorded, without credentials
    recorded = stored_alerts(results_pg, pipeline)
    assert {c: r[0] for c, r in recorded.items()} == {"webhook": "sent", "email": "sent"}
    stored = json.dumps([r[1] for r in recorded.values()])
    assert "abort-1" in stored
    for secret in (PAYLOAD, SMTP_PASSWORD, WEBHOOK_TOKEN):
        assert secret not in stored, secret

    # a retry of the task sends nothing new
    again = send_alerts(
        results_pg, pipeline=pipeline, semantics="exactly_once", run_id=run_id,
        summary=_summary(), outcome=outcome,
    )  # fmt: skip
    assert again == {"webhook": "already_sent", "email": "already_sent"}
    assert len(mailbox.messages) == 1
    assert len(hooks.requests) == 1
    assert {c: r[0] for c, r in stored_alerts(results_pg, pipeline).items()} == {
        "webhook": "sent",
        "email": "sent",
    }


def test_undefined_channel_is_skipped_and_failed_channel_retried(
    results_pg: Any,
    pipeline: str,
    alert_connections: None,
    http_receiver: tuple[WebhookCatcher, int],
) -> None:
    from recon.alert.send import send_alerts

    hooks, _ = http_receiver
    outcome, summary = lost_outcome(), lost_summary()
    hooks.fail_next = 1

    first = send_alerts(
        results_pg, pipeline=pipeline, semantics="exactly_once", run_id="r1", summary=summary,
        outcome=outcome, smtp_conn_id="recon_alert_smtp_not_defined",
    )  # fmt: skip
    assert first == {"webhook": "failed", "email": "skipped"}
    recorded = stored_alerts(results_pg, pipeline)
    assert recorded["webhook"][0] == "failed" and "HTTP 500" in recorded["webhook"][2]
    assert recorded["email"][0] == "skipped" and "not defined" in recorded["email"][2]

    second = send_alerts(
        results_pg, pipeline=pipeline, semantics="exactly_once", run_id="r1", summary=summary,
        outcome=outcome, smtp_conn_id="recon_alert_smtp_not_defined",
    )  # fmt: skip
    assert second == {"webhook": "sent", "email": "skipped"}
    assert len(hooks.requests) == 2
    assert "gone-9  at orders/2@5" in json.loads(hooks.requests[1]["body"])["text"]
    assert (
        send_alerts(
            results_pg,
            pipeline=pipeline,
            semantics="exactly_once",
            run_id="r1",
            summary=summary,
            outcome=outcome,
            smtp_conn_id="recon_alert_smtp_not_defined",
        )["webhook"]  # fmt: skip
        == "already_sent"
    )
    assert len(hooks.requests) == 2


def test_the_full_list_sql_of_a_crafted_run_id_runs_as_written(
    results_pg: Any, pipeline: str
) -> None:
    """The SQL an alert prints to list every message is pasteable: a run id with a quote, a
    line break and backticks is one literal that PostgreSQL reads back as the run id."""
    from recon.alert.content import build_alert

    run_id = "manual__x'; DROP TABLE recon.runs; --\nSELECT `1` \\ \u2028"
    outcome = lost_outcome(observed=5, validation_id="v")
    summary = {"counts": {"lost": 5}, "samples": {"lost": [
        {"message_id": "gone-9", "topic": TOPIC, "partition": 2, "offsets": [5]}]}}  # fmt: skip
    text = build_alert(
        pipeline=pipeline, semantics="exactly_once", run_id=run_id, summary=summary,
        outcome=outcome,
    ).text()  # fmt: skip
    (line,) = [line for line in text.splitlines() if "all of them:" in line]
    sql = line.split("all of them: ", 1)[1].strip("`")
    literal = re.search(r"run_id = (E?'(?:[^']|'')*')", sql)
    assert literal is not None, sql
    with results_pg.cursor() as cur:
        cur.execute(f"SELECT {literal.group(1)}")
        assert cur.fetchone() == (run_id,)
        cur.execute(sql)
        assert cur.fetchall() == []
        cur.execute("SELECT to_regclass('recon.runs') IS NOT NULL")
        assert cur.fetchone() == (True,)
    results_pg.commit()


def test_validation_outcome_is_recorded_on_the_run(results_pg: Any, pipeline: str) -> None:
    from recon.validation import ValidationOutcome, data_docs_url, record_validation

    with results_pg.cursor() as cur:
        cur.execute(
            "INSERT INTO recon.runs (pipeline, run_id, semantics, status, started_at, "
            "contract_passed) VALUES (%s, 'r1', 'exactly_once', 'passed', now(), true)",
            (pipeline,),
        )
    results_pg.commit()
    page = "/srv/state/gx/uncommitted/data_docs/local_site/validations/exactly_once/r1/t/b.html"
    outcome = ValidationOutcome(
        passed=False, failures=[], data_docs_path=page, validation_id="exactly_once/r1/t/b"
    )
    try:
        assert record_validation(results_pg, pipeline, "r1", outcome)
        assert not record_validation(results_pg, pipeline, "no-such-run", outcome)
        with results_pg.cursor() as cur:
            cur.execute(
                "SELECT status, contract_passed, validation_url FROM recon.runs "
                "WHERE pipeline = %s AND run_id = 'r1'",
                (pipeline,),
            )
            # A link under RECON_DATA_DOCS_BASE_URL when the site is served, else file://.
            expected = data_docs_url(page)
            assert expected.endswith("validations/exactly_once/r1/t/b.html")
            assert cur.fetchone() == ("failed", False, expected)
        results_pg.commit()
    finally:
        with results_pg.cursor() as cur:
            cur.execute("DELETE FROM recon.runs WHERE pipeline = %s", (pipeline,))
        results_pg.commit()
