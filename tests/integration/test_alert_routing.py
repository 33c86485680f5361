"""A pipeline's declared alert routes end to end (issue 22, "Alerts"): a pipeline file routing one
pipeline to Slack and to a webhook, a failed run stored in the real results database, and
``alert_for_run`` (what ``recon run`` and the Airflow alert task call) delivering to two real HTTP
receivers on loopback: Slack's message format arrives at the Slack route, each route is its own
``recon.alerts`` row, and a second send is ``already_sent`` on both, delivering nothing.

Only configuration is set here (the two connections): no mocks.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from fixtures.alerts import WebhookCatcher, catching, lost_outcome, stored_alerts

from recon.config import parse_pipelines

pytestmark = pytest.mark.integration

SLACK_TOKEN = "T0RT0001/B0RT0002/it5lackT0kenQ7"
SLACK_ROUTE, HOOK_ROUTE = "slack:it_route_slack", "webhook:it_route_hooks"


def _pipelines_file(name: str) -> str:
    declaration = {
        "semantics": "exactly_once",
        "schedule": None,
        "settle_seconds": 0,
        "kafka": {"connection": "kafka_default", "topic": "orders",
                  "consumer_group": "orders-sink", "message_id": {"header": "message_id"}},
        "sink": {"connection": "postgres_sink", "table": "public.orders",
                 "message_id_column": "message_id"},
        "alerts": [
            {"notifier": "slack", "connection": "it_route_slack"},
            {"notifier": "webhook", "connection": "it_route_hooks"},
        ],
    }  # fmt: skip
    return yaml.safe_dump({"pipelines": {name: declaration}}, sort_keys=False)


def _store_failed_run(pg: Any, pipeline: str, run_id: str) -> None:
    """What a run that lost message ``gone-9`` at orders/2@5 leaves in ``recon``."""
    with pg.cursor() as cur:
        cur.execute(
            "INSERT INTO recon.runs (pipeline, run_id, semantics, status, started_at, "
            "finished_at, counts, contract_passed, violations, duration_seconds) "
            "VALUES (%s, %s, 'exactly_once', 'failed', now(), now(), %s, false, %s, 1.5)",
            (pipeline, run_id, json.dumps({"delivered": 3, "lost": 1}),
             json.dumps(lost_outcome().failures)),
        )  # fmt: skip
        cur.execute(
            "INSERT INTO recon.discrepancies (pipeline, run_id, verdict, message_id, topic, "
            "partition, offsets, first_offset) VALUES (%s, %s, 'lost', 'gone-9', 'orders', 2, "
            "ARRAY[5]::bigint[], 5)",
            (pipeline, run_id),
        )
    pg.commit()


def test_a_pipeline_routed_to_slack_and_a_webhook_alerts_each_once(
    monkeypatch: pytest.MonkeyPatch, results_pg: Any, pipeline: str
) -> None:
    from recon.alert.for_run import alert_for_run

    slack, hooks = WebhookCatcher(), WebhookCatcher()
    cfg = parse_pipelines(_pipelines_file(pipeline))[pipeline]
    run_id = "manual__2026-03-01T00:00:00+00:00"
    _store_failed_run(results_pg, pipeline, run_id)
    with catching(slack) as slack_port, catching(hooks) as hooks_port:
        slack_conn = {
            "conn_type": "slackwebhook",
            "schema": "http",
            "host": f"127.0.0.1:{slack_port}/services",
            "password": SLACK_TOKEN,
        }
        hooks_conn = {"conn_type": "http", "host": "127.0.0.1", "port": hooks_port,
                      "extra": {"endpoint": "/hook"}}  # fmt: skip
        monkeypatch.setenv("AIRFLOW_CONN_IT_ROUTE_SLACK", json.dumps(slack_conn))
        monkeypatch.setenv("AIRFLOW_CONN_IT_ROUTE_HOOKS", json.dumps(hooks_conn))
        first = alert_for_run(cfg, run_id)
        second = alert_for_run(cfg, run_id)

    assert first["channels"] == {SLACK_ROUTE: "sent", HOOK_ROUTE: "sent"}
    assert second["channels"] == {SLACK_ROUTE: "already_sent", HOOK_ROUTE: "already_sent"}
    assert len(slack.requests) == 1 and len(hooks.requests) == 1

    # Slack's incoming-webhook format, on the token's path
    request = slack.requests[0]
    assert request["method"] == "POST" and request["path"] == f"/services/{SLACK_TOKEN}"
    assert request["headers"]["Content-Type"].startswith("application/json")
    message = json.loads(request["body"])
    assert set(message) == {"text", "blocks"} and pipeline in message["text"]
    assert 2 <= len(message["blocks"]) <= 50
    for block in message["blocks"]:
        assert block["type"] == "section"
        assert block["text"]["type"] == "mrkdwn" and len(block["text"]["text"]) <= 3000
    texts = "\n".join(b["text"]["text"] for b in message["blocks"])
    assert "• gone-9  at orders/2@5" in texts and "_Repair:_ replay" in texts
    # the webhook route: its own Slack-compatible JSON
    assert hooks.requests[0]["path"] == "/hook"
    assert "gone-9  at orders/2@5" in json.loads(hooks.requests[0]["body"])["text"]

    # one row per route, both sent, no token recorded
    rows = stored_alerts(results_pg, pipeline)
    assert {channel: row[0] for channel, row in rows.items()} == {
        SLACK_ROUTE: "sent",
        HOOK_ROUTE: "sent",
    }
    assert rows[SLACK_ROUTE][1]["target"] == {"host": "127.0.0.1", "http_status": 200}
    assert SLACK_TOKEN.split("/")[-1] not in json.dumps([r[1:] for r in rows.values()])
