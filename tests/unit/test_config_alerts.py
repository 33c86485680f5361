"""Declaring a pipeline's alert routes (``alerts:``, issue 22): what loads, that leaving it out
keeps the default routes, and the exact words of each mistake, naming the route by its index."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import pytest
from fixtures.alerts import lost_outcome, lost_summary
from fixtures.declarations import doc, errors_of

from recon.alert import channels, send
from recon.alert.content import build_alert
from recon.config import parse_pipelines
from recon.config.model import NOTIFIERS, AlertRoute
from recon.config.schema import AlertRouteDecl

pytestmark = pytest.mark.unit

PREFIX = "pipelines.yaml: pipeline 'payments': "
SLACK = {"notifier": "slack", "connection": "slack_ops"}
EMAIL = {"notifier": "email", "connection": "smtp_default"}
HOOKS = {"notifier": "webhook", "connection": "hooks"}
SHAPE = "{notifier: slack, connection: <connection id>}"


def test_declared_routes_load_in_file_order() -> None:
    config = parse_pipelines(doc(alerts=[SLACK, EMAIL, HOOKS]))["payments"]
    assert config.alerts == (
        AlertRoute("slack", "slack_ops"),
        AlertRoute("email", "smtp_default"),
        AlertRoute("webhook", "hooks"),
    )


def test_without_alerts_the_pipeline_keeps_the_default_routes() -> None:
    assert parse_pipelines(doc())["payments"].alerts == ()


def test_one_notifier_on_two_connections_is_two_routes() -> None:
    other = {"notifier": "slack", "connection": "slack_data_team"}
    config = parse_pipelines(doc(alerts=[SLACK, other]))["payments"]
    assert [r.connection for r in config.alerts] == ["slack_ops", "slack_data_team"]


@pytest.mark.parametrize("notifier", NOTIFIERS)
def test_every_notifier_the_file_accepts_has_a_sender(
    notifier: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A connection with nothing in it: the notifier's own sender (a provider hook, through the
    # installed transport) refuses it; an unknown notifier is refused by the dispatch instead.
    monkeypatch.setenv("AIRFLOW_CONN_UNIT_EMPTY", json.dumps({"conn_type": "generic"}))
    alert = build_alert(
        pipeline="payments", semantics="exactly_once", run_id="r1", summary=lost_summary(),
        outcome=lost_outcome(),
    )  # fmt: skip
    with pytest.raises(channels.SendFailed):
        send.send(notifier, "unit_empty", alert, timeout=1.0)
    with pytest.raises(ValueError, match="unknown notifier 'teams'"):
        send.send("teams", "unit_empty", alert, timeout=1.0)
    assert set(AlertRouteDecl.model_fields) == {f.name for f in fields(AlertRoute)}


@pytest.mark.parametrize(
    ("alerts", "message"),
    [
        pytest.param(
            [SLACK, {"notifier": "teams", "connection": "x"}],
            "alerts[1].notifier: expected one of slack, webhook, email, got 'teams'",
            id="unknown-notifier",
        ),
        pytest.param(
            [{"notifier": "slack"}],
            "alerts[0].connection: missing required key (the Airflow connection id the "
            "notifier sends through)",
            id="missing-connection",
        ),
        pytest.param(
            [{"connection": "slack_ops"}],
            "alerts[0].notifier: missing required key (one of slack, webhook, email)",
            id="missing-notifier",
        ),
        pytest.param(
            [SLACK, EMAIL, dict(SLACK)],
            "alerts: alerts[2] repeats alerts[0] (notifier slack, connection slack_ops): "
            "declare each route once",
            id="duplicate-route",
        ),
        pytest.param(
            [],
            f"alerts: expected at least one {SHAPE}; leave alerts out for the default routes "
            "(webhook and email)",
            id="empty-list",
        ),
        pytest.param(None, f"alerts: expected a list of {SHAPE}, got null", id="null"),
        pytest.param(SLACK, f"alerts: expected a list of {SHAPE}, got a mapping", id="mapping"),
        pytest.param(["slack"], "alerts[0]: expected a mapping, got a string", id="bare-name"),
        pytest.param(
            [{"notifier": "slack", "connection": "slack_ops", "channel": "#ops"}],
            "alerts[0].channel: unknown key (expected one of notifier, connection)",
            id="unknown-key",
        ),
        pytest.param(
            [{"notifier": "slack", "connection": "https://hooks.slack.com/services/T0/B0/x"}],
            "alerts[0].connection: expected an Airflow connection id (letters, digits, '_', "
            "'.', '-'), not a URI or credentials",
            id="url-as-connection",
        ),
    ],
)
def test_each_mistake_names_the_route_and_its_key(alerts: Any, message: str) -> None:
    assert errors_of(doc(alerts=alerts)) == [PREFIX + message]


@pytest.mark.parametrize("key", ["url", "token", "password"])
def test_a_credential_in_a_route_points_to_the_connection(key: str) -> None:
    (error,) = errors_of(doc(alerts=[{**SLACK, key: "T000/B000/XXXX"}]))
    assert error.startswith(PREFIX + f"alerts[0].{key}: credentials and connection settings")
    assert "alerts[].connection" in error
    assert "T000/B000/XXXX" not in error


def test_route_mistakes_are_reported_with_the_other_keys_mistakes() -> None:
    errors = errors_of(doc(settle_seconds=-1, alerts=[{"notifier": "pager", "connection": "p"}]))
    assert PREFIX + "settle_seconds: must be 0 or more, got -1" in errors
    assert any(e.startswith(PREFIX + "alerts[0].notifier: expected one of") for e in errors)


def test_a_partition_of_start_offsets_stays_a_dotted_key() -> None:
    # The brackets are for list items only: a mapping key keeps the form it had.
    (error,) = errors_of(doc(kafka__start_offsets={3: -1}))
    offset = "an offset must be a whole number, 0 or more, got -1"
    assert error == PREFIX + f"kafka.start_offsets.3: {offset}"
