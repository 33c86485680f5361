"""The Slack notifier and per-pipeline routes (issue 22, "Alerts"):

- the message is Slack's incoming-webhook format (``text`` and mrkdwn ``section`` blocks) within
  Slack's limits (3000 characters a section, 50 blocks), a long rule split, never cut mid-escape;
- no link, mention or command comes from the data (``&``, ``<``, ``>`` escaped, ``verbatim``);
- it is sent by Airflow's Slack provider (``SlackWebhookHook``) to the URL it builds from a
  ``slackwebhook`` connection, https only (plain http to loopback); a redirect or an answer that
  is not Slack's ``ok`` is no delivery, and the token appears in no recorded error;
- each declared route is its own ``recon.alerts`` row, sent once; one route failing stops no
  other; ``alert_for_run`` (the CLI's and the Airflow task's path) sends the pipeline's routes.

Receivers are real HTTP servers on loopback in this process (``fixtures.alerts``).
"""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

import pytest
from fixtures.alert_results import FakeResults as StoredRun
from fixtures.alert_results import run_row
from fixtures.alerts import FakeResults, WebhookCatcher, catching, lost_outcome, lost_summary

from recon.alert import for_run
from recon.alert.content import Alert, VerdictReport, build_alert
from recon.alert.send import send_alerts
from recon.alert.slack import BLOCKS_MAX, SECTION_MAX, slack_payload, slack_text
from recon.config.model import AlertRoute

pytestmark = pytest.mark.unit

TOKEN = "T0AAAA11/B0BBBB22/s1ackT0kenXyZ93"
CRAFTED = (
    "evil-1 <!channel> <!here> <@U024BE7LH> <https://evil.example/x|click> @here #general "
    "a&b *bold* `code`"
)


def _alert(message_id: str = "gone-9") -> Alert:
    summary = lost_summary()
    summary["samples"]["lost"][0]["message_id"] = message_id
    return build_alert(
        pipeline="payments", semantics="exactly_once", run_id="r1", summary=summary,
        outcome=lost_outcome(),
    )  # fmt: skip


def _connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, **fields: Any) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(fields))


def _texts(payload: dict[str, Any]) -> list[str]:
    return [payload["text"], *(b["text"]["text"] for b in payload["blocks"])]


def _big_alert(reports: int, samples: int, id_length: int) -> Alert:
    return Alert(
        pipeline="payments", semantics="exactly_once", run_id="r1", title="broken",
        reports=[
            VerdictReport(
                verdict=f"verdict{r}", rule="r", observed=samples, allowed="forbidden",
                samples=[f"<{r}-{s}>" + "x" * id_length for s in range(samples)],
                hint=f"repair hint {r}",
            )
            for r in range(reports)
        ],
        data_docs_url="file:///tmp/x.html", run_url="http://airflow.test/dags/p/runs/r1",
        validation_id="v1",
    )  # fmt: skip


# --- the message ------------------------------------------------------------------------------


def test_the_message_is_text_and_mrkdwn_sections() -> None:
    payload = slack_payload(_alert())
    assert set(payload) == {"text", "blocks"}
    assert payload["text"].startswith("Delivery contract broken: pipeline payments claims")
    for block in payload["blocks"]:
        assert block["type"] == "section"
        assert block["text"]["type"] == "mrkdwn" and block["text"]["verbatim"] is True
    texts = [b["text"]["text"] for b in payload["blocks"]]
    assert "*Run* `r1`" in texts
    rule = next(t for t in texts if t.startswith("*lost: 1"))
    assert "• gone-9  at orders/2@5" in rule and "_Repair:_ replay these committed" in rule
    links = texts[-1]
    assert "<file:///tmp/none.html|Data Docs>" in links
    assert "validation `exactly_once/r1/t/recon_results-x`" in links


def test_the_message_keeps_to_slacks_limits() -> None:
    payload = slack_payload(_big_alert(reports=80, samples=10, id_length=200))
    blocks = payload["blocks"]
    assert len(blocks) == BLOCKS_MAX
    assert all(len(b["text"]["text"]) <= SECTION_MAX for b in blocks)
    assert "more parts of this alert are not shown" in blocks[-2]["text"]["text"]
    assert "|Airflow run>" in blocks[-1]["text"]["text"]  # the links always close the message
    assert len(payload["text"]) <= 3000


def test_a_rule_longer_than_a_section_continues_in_the_next_with_its_repair_hint() -> None:
    blocks = slack_payload(_big_alert(reports=1, samples=10, id_length=700))["blocks"]
    rule = [b["text"]["text"] for b in blocks[2:-1]]
    assert len(rule) > 1 and all(len(t) <= SECTION_MAX for t in rule)
    joined = "\n".join(rule)
    assert joined.count("• &lt;0-") == 10  # every sample, none cut
    assert rule[-1].endswith("_Repair:_ repair hint 0")


def test_a_line_longer_than_a_section_is_cut_outside_an_escape() -> None:
    text = slack_text("a" * (SECTION_MAX - 2) + "<b>")
    assert len(text) <= SECTION_MAX and text.endswith("…")
    assert not re.search(r"&[a-z]*…$", text), text[-8:]
    assert slack_text("a<b") == "a&lt;b"


def test_a_crafted_message_id_makes_no_link_mention_or_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RECON_AIRFLOW_BASE_URL", "http://airflow.test:8080/")
    payload = slack_payload(_alert(CRAFTED))
    every = "\n".join(_texts(payload))
    for forged in ("<!channel>", "<!here>", "<@U024BE7LH>", "<https://evil"):
        assert forged not in every, forged
    assert "&lt;!channel&gt;" in every and "a&amp;b" in every
    # the only Slack markup: the two links built from the run and Data Docs URLs
    assert re.findall(r"<[^>]*>", every) == [
        "<http://airflow.test:8080/dags/payments/runs/r1|Airflow run>",
        "<file:///tmp/none.html|Data Docs>",
    ]
    for text in [b["text"]["text"] for b in payload["blocks"]]:
        outside = re.sub(r"`[^`\n]*`", "", text)
        # the id stays inside a code span: no bare @here, #channel or emphasis from the data
        for forged in ("@here", "#general", "*bold*", "evil-1"):
            assert forged not in outside, (forged, text)


def test_a_link_url_cannot_end_the_link_early() -> None:
    alert = _big_alert(reports=1, samples=1, id_length=1)
    crafted = Alert(**{**alert.__dict__, "run_url": "http://a.test/runs/x|<!channel>&y"})
    links = slack_payload(crafted)["blocks"][-1]["text"]["text"]
    assert links.startswith("<http://a.test/runs/x%7C&lt;!channel&gt;&amp;y|Airflow run>")


# --- the connection ------------------------------------------------------------------------------


def _slack_route(monkeypatch: pytest.MonkeyPatch, **fields: Any) -> tuple[FakeResults, str]:
    """Sends the alert on one Slack route whose connection has ``fields``; the results and the
    route's status."""
    _connection(monkeypatch, "unit_slack", conn_type="slackwebhook", **fields)
    pg = FakeResults()
    return pg, _send(pg, AlertRoute("slack", "unit_slack"))["slack:unit_slack"]


@pytest.mark.parametrize(
    ("host", "password", "path"),
    [
        ("http://127.0.0.1:{port}/services", TOKEN, f"/services/{TOKEN}"),
        ("http://127.0.0.1:{port}/services/", "/" + TOKEN, f"/services/{TOKEN}"),
        ("ignored.test", f"http://127.0.0.1:{{port}}/services/{TOKEN}", f"/services/{TOKEN}"),
    ],
    ids=["host-and-token", "slashes", "whole-url-in-password"],
)
def test_the_provider_sends_to_the_url_it_builds_from_the_connection(
    monkeypatch: pytest.MonkeyPatch, host: str, password: str, path: str
) -> None:
    slack = WebhookCatcher()
    with catching(slack) as port:
        pg, status = _slack_route(
            monkeypatch, host=host.format(port=port), password=password.format(port=port)
        )
    assert status == "sent"
    (request,) = slack.requests
    assert request["path"] == path and request["method"] == "POST"
    assert pg.row("slack:unit_slack")["summary"]["target"]["host"] == "127.0.0.1"


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"host": "hooks.slack.com/services"}, "has no Slack webhook token"),
        ({"password": f"http://hooks.slack.com/services/{TOKEN}"}, "must be https"),
        ({"host": "hooks.test", "schema": "http", "password": TOKEN}, "must be https"),
        ({"password": f"file:///etc/{TOKEN}"}, "must be https"),
    ],
    ids=["no-token", "plain-http-remote", "http-schema-remote", "file-url"],
)
def test_a_connection_without_token_or_https_is_refused_naming_no_token(
    monkeypatch: pytest.MonkeyPatch, fields: dict[str, Any], needle: str
) -> None:
    pg, status = _slack_route(monkeypatch, **fields)
    error = pg.row("slack:unit_slack")["error"]
    assert status == "failed" and needle in error
    assert TOKEN not in error and "s1ackT0ken" not in error


@pytest.mark.parametrize("code", [307, 308])
def test_a_redirect_is_refused_and_the_token_is_not_in_the_error(
    monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    elsewhere = WebhookCatcher()
    with catching(elsewhere) as other_port:
        moved = WebhookCatcher(status=code, location=f"http://127.0.0.1:{other_port}/landed")
        with catching(moved) as port:
            pg, status = _slack_route(
                monkeypatch, host=f"http://127.0.0.1:{port}/services", password=TOKEN
            )
    error = pg.row("slack:unit_slack")["error"]
    assert status == "failed" and f"HTTP {code}" in error and "redirect, not followed" in error
    assert len(moved.requests) == 1 and elsewhere.requests == []
    assert "s1ackT0ken" not in error


def test_a_moved_webhook_that_answers_a_get_is_no_delivery(monkeypatch: pytest.MonkeyPatch) -> None:
    """urllib follows a 302 for a POST as a GET, without the message: whatever answers it, the
    alert was not delivered (Slack answers a delivered message with ``ok``)."""

    elsewhere = WebhookCatcher(body=b"<html>moved here</html>")
    with catching(elsewhere) as other_port:
        moved = WebhookCatcher(status=302, location=f"http://127.0.0.1:{other_port}/page")
        with catching(moved) as port:
            pg, status = _slack_route(
                monkeypatch, host=f"http://127.0.0.1:{port}/services", password=TOKEN
            )
    assert [(r["method"], r["body"]) for r in elsewhere.requests] == [("GET", "")]
    error = pg.row("slack:unit_slack")["error"]
    assert status == "failed" and "not Slack's 'ok'" in error and "s1ackT0ken" not in error


# --- routes: one row each, sent once, independent ---------------------------------------------


def _send(pg: FakeResults, *routes: AlertRoute) -> dict[str, str]:
    return send_alerts(
        pg, pipeline="payments", semantics="exactly_once", run_id="r1", summary=lost_summary(),
        outcome=lost_outcome(), timeout=5.0, routes=routes,
    )  # fmt: skip


ROUTES = (
    AlertRoute("slack", "unit_slack"),
    AlertRoute("webhook", "unit_hooks"),
    AlertRoute("email", "unit_smtp_not_defined"),
)


def test_each_route_is_its_own_row_and_is_sent_once(monkeypatch: pytest.MonkeyPatch) -> None:
    slack, hooks = WebhookCatcher(), WebhookCatcher()
    with catching(slack) as slack_port, catching(hooks) as hooks_port:
        _connection(monkeypatch, "unit_slack", conn_type="slackwebhook",
                    host=f"http://127.0.0.1:{slack_port}/services", password=TOKEN)  # fmt: skip
        _connection(monkeypatch, "unit_hooks", conn_type="http", host="127.0.0.1",
                    port=hooks_port, extra={"endpoint": "/hook"})  # fmt: skip
        pg = FakeResults()
        first = _send(pg, *ROUTES)
        again = _send(pg, *ROUTES)

    assert first == {
        "slack:unit_slack": "sent",
        "webhook:unit_hooks": "sent",
        "email:unit_smtp_not_defined": "skipped",
    }
    assert again == {**first, "slack:unit_slack": "already_sent",
                     "webhook:unit_hooks": "already_sent"}  # fmt: skip
    assert len(slack.requests) == 1 and len(hooks.requests) == 1
    assert slack.requests[0]["path"] == f"/services/{TOKEN}"
    assert "Authorization" not in slack.requests[0]["headers"]
    body = json.loads(slack.requests[0]["body"])
    assert {b["type"] for b in body["blocks"]} == {"section"}
    assert json.loads(hooks.requests[0]["body"])["blocks"][0]["type"] == "header"
    target = pg.row("slack:unit_slack")["summary"]["target"]
    assert target == {"host": "127.0.0.1", "http_status": 200}
    assert TOKEN not in json.dumps(list(pg.rows.values()), default=str)


def test_a_failing_route_stops_no_other_and_its_error_names_no_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hooks = WebhookCatcher()
    with catching(hooks) as hooks_port:
        # http.client.InvalidURL, whose message quotes the path with the token
        _connection(monkeypatch, "unit_slack", conn_type="slackwebhook",
                    password=f"http://127.0.0.1:9/services/{TOKEN} x")  # fmt: skip
        _connection(monkeypatch, "unit_hooks", conn_type="http", host="127.0.0.1",
                    port=hooks_port, extra={"endpoint": "/hook"})  # fmt: skip
        pg = FakeResults()
        statuses = _send(pg, *ROUTES[:2])
    assert statuses == {"slack:unit_slack": "failed", "webhook:unit_hooks": "sent"}
    error = pg.row("slack:unit_slack")["error"]
    assert error and "InvalidURL" in error
    for secret in (TOKEN, "s1ackT0kenXyZ93", "T0AAAA11"):
        assert secret not in error, error


def test_alert_for_run_sends_the_pipelines_routes(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: dict[str, Any] = {}
    failures = lost_outcome().failures
    db = StoredRun(run_row({"delivered": 3, "lost": 1}, failures), [])

    @contextmanager
    def results_db() -> Any:
        yield db

    def send_alerts(pg: Any, **kwargs: Any) -> dict[str, str]:
        sent.update(kwargs)
        return {"slack:unit_slack": "sent"}

    monkeypatch.setattr("recon.run.services.results_db", results_db)
    monkeypatch.setattr("recon.alert.send.send_alerts", send_alerts)
    cfg = SimpleNamespace(name="payments", semantics="exactly_once", alerts=ROUTES)
    result = for_run.alert_for_run(cfg, "r1")
    assert sent["routes"] == ROUTES
    assert result["channels"] == {"slack:unit_slack": "sent"}
