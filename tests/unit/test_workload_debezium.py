"""The ``outbox_debezium`` workload's pure parts: the connectors' configs (no password in them,
each connector its own slot and topic prefix, one publication) and how a change event names its
outbox row's messageId. The scenario itself runs on the real Connect worker:
``tests/integration/test_debezium_outbox.py``."""

from __future__ import annotations

import json
import re

import pytest

from recon_workload import SCENARIOS, debezium
from recon_workload.scenarios_debezium import change_event_id

pytestmark = pytest.mark.unit

ENV = {
    "RECON_PG_HOST": "127.0.0.1",
    "RECON_PG_PORT": "23432",
    "RECON_PG_SINK_DB": "recon_sink",
    "RECON_PG_DEBEZIUM_USER": "recon_debezium",
    "RECON_PG_DEBEZIUM_PASSWORD": "s3cret-not-in-any-config",
}


@pytest.fixture
def connectors(monkeypatch: pytest.MonkeyPatch) -> debezium.Connectors:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv(debezium.NAME_VARIABLE, "recon-test-abc123")
    return debezium.connectors()


def test_the_configs_name_the_password_only_as_a_worker_placeholder(
    connectors: debezium.Connectors,
) -> None:
    router, cdc = debezium.router_config(connectors), debezium.cdc_config(connectors)
    for config in (router, cdc):
        assert config["database.password"] == "${env:RECON_PG_DEBEZIUM_PASSWORD}"
        assert ENV["RECON_PG_DEBEZIUM_PASSWORD"] not in json.dumps(config)
        assert config["database.user"] == "recon_debezium"
        assert config["publication.autocreate.mode"] == "disabled"
        assert config["publication.name"] == "recon_test_abc123"
    # Two slots and two topic prefixes (Debezium names its metrics by the prefix), one publication.
    assert (router["slot.name"], cdc["slot.name"]) == ("recon_test_abc123", "recon_test_abc123_cdc")
    assert router["topic.prefix"] != cdc["topic.prefix"]
    assert router["transforms.outbox.type"] == debezium.EVENT_ROUTER
    assert "transforms.outbox.type" not in cdc


def test_the_change_topic_of_a_runs_outbox_is_the_runs_second_topic(
    connectors: debezium.Connectors,
) -> None:
    cdc = debezium.cdc_config(connectors)
    debezium_topic = f"{cdc['topic.prefix']}.public.wl_outbox_debezium_a1_b2_outbox"
    assert re.fullmatch(debezium.TABLES, "public.wl_outbox_debezium_a1_b2_outbox")
    renamed = re.sub(
        cdc["transforms.name.regex"] + "$",
        cdc["transforms.name.replacement"].replace("$1", r"\1"),
        debezium_topic,
    )
    assert renamed == "wl-outbox_debezium-a1_b2-in"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (b'{"before": null, "after": {"message_id": "m1"}, "op": "c"}', "m1"),
        (b'{"before": {"seq": 1}, "after": null, "op": "d"}', None),
        (None, None),  # a tombstone
        (b"\xff not json", None),
        (b'["after"]', None),
        (b'{"after": {"message_id": 7}}', None),
    ],
)
def test_a_change_event_names_its_rows_message_id(
    value: bytes | None, expected: str | None
) -> None:
    assert change_event_id(value) == expected


def test_the_scenario_is_registered_with_its_faults_and_takes_a_hold() -> None:
    scenario = SCENARIOS["outbox_debezium"]
    assert set(scenario.defaults) == {"worker_kill", "pause", "skipped", "delete_rows"}
    assert scenario.takes_hold
