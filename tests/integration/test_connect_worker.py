"""The stack's Kafka Connect worker (scripts/connect.sh) and second Kafka cluster
(scripts/kafka-replica.sh), both started by `make up`: on loopback only, MirrorMaker 2's connectors
installed, and a real connector copying records within the project's cluster and into the second
one, values and headers byte for byte."""

from __future__ import annotations

import json
import os
import re
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

import pytest
from fixtures.kafka_read import read_topic
from fixtures.listening import listening_addresses

pytestmark = pytest.mark.integration

MIRROR_SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
# The replica of topic T is "<source alias>.T" (MirrorMaker 2's DefaultReplicationPolicy).
SOURCE_ALIAS = "recontest"


def _call(url: str, method: str = "GET", body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        raw = response.read()
    return json.loads(raw) if raw else None


@pytest.fixture(scope="module")
def connect_url() -> str:
    url = os.environ.get("RECON_CONNECT_URL")
    if not url:
        pytest.fail(
            "RECON_CONNECT_URL is not set: run the tests with scripts/with-env.sh", pytrace=False
        )
    try:
        _call(f"{url}/connectors")
    except (urllib.error.URLError, OSError) as exc:
        pytest.fail(
            f"Kafka Connect at {url} did not answer ({exc}): start it with `make up`", pytrace=False
        )
    return url


def test_the_rest_api_listens_on_loopback_only(connect_url: str) -> None:
    port = urlparse(connect_url).port
    assert port is not None
    assert listening_addresses(port) == {"127.0.0.1"}


def test_mirrormaker_2_connectors_are_installed(connect_url: str) -> None:
    plugins = {plugin["class"] for plugin in _call(f"{connect_url}/connector-plugins")}
    assert MIRROR_SOURCE in plugins


def _wait_running(connect_url: str, name: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    status: Any = None
    while time.monotonic() < deadline:
        try:
            status = _call(f"{connect_url}/connectors/{name}/status")
        except urllib.error.HTTPError:  # 404 until the herder has written the config
            status = None
        if status is not None:
            states = [status["connector"]["state"]] + [t["state"] for t in status["tasks"]]
            assert "FAILED" not in states, json.dumps(status, indent=1)
            if status["tasks"] and set(states) == {"RUNNING"}:
                return
        time.sleep(1)
    pytest.fail(f"connector {name} not running within {timeout} s: {status}")


@pytest.fixture(scope="module")
def replica_config() -> dict[str, str]:
    """The librdkafka settings of the second cluster (scripts/kafka-replica.sh)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    config = {"bootstrap.servers": os.environ["RECON_KAFKA_REPLICA_BOOTSTRAP"]}
    try:
        AdminClient(config).list_topics(timeout=15)
    except KafkaException as exc:
        pytest.fail(
            f"the replica Kafka did not answer ({exc}): start it with `make up`", pytrace=False
        )
    return config


def test_the_replica_cluster_listens_on_loopback_only(replica_config: dict[str, str]) -> None:
    for variable in ("RECON_KAFKA_REPLICA_PORT", "RECON_KAFKA_REPLICA_CONTROLLER_PORT"):
        assert listening_addresses(int(os.environ[variable])) == {"127.0.0.1"}, variable


@pytest.mark.parametrize("target", ["the same cluster", "the replica cluster"])
def test_a_mirror_source_connector_copies_a_topic_byte_for_byte(
    target: str,
    connect_url: str,
    kafka_config: dict[str, str],
    replica_config: dict[str, str],
    new_topic: Callable[..., str],
) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient

    topic = new_topic("connect-rt")
    replica = f"{SOURCE_ALIAS}.{topic}"
    producer = Producer(kafka_config)
    sent = [(f"k{i}".encode(), f'{{"n": {i}}}'.encode(), f"m{i}".encode()) for i in range(20)]
    for key, value, message_id in sent:
        producer.produce(topic, key=key, value=value, headers=[("message_id", message_id)])
    assert producer.flush(30) == 0

    # On the same cluster the rename keeps the replica apart from its source.
    target_config = kafka_config if target == "the same cluster" else replica_config
    admin = AdminClient(target_config)
    name = f"mm2-test-{uuid.uuid4().hex[:8]}"
    try:
        _call(
            f"{connect_url}/connectors",
            "POST",
            {
                "name": name,
                "config": {
                    "connector.class": MIRROR_SOURCE,
                    "tasks.max": "1",
                    "source.cluster.alias": SOURCE_ALIAS,
                    "target.cluster.alias": "recontarget",
                    "source.cluster.bootstrap.servers": os.environ["RECON_KAFKA_BOOTSTRAP"],
                    "target.cluster.bootstrap.servers": target_config["bootstrap.servers"],
                    # The task's records go out through the worker's producer, which writes to
                    # the worker's own cluster unless the connector points it at the target.
                    "producer.override.bootstrap.servers": target_config["bootstrap.servers"],
                    "topics": re.escape(topic),
                    "replication.factor": "1",
                    "offset-syncs.topic.replication.factor": "1",
                    "sync.topic.acls.enabled": "false",
                },
            },
        )
        _wait_running(connect_url, name)
        # The worker's converters are the byte arrays of scripts/connect.sh: nothing re-encoded.
        deadline = time.monotonic() + 90
        copied: list[Any] = []
        while time.monotonic() < deadline:
            if replica in admin.list_topics(timeout=10).topics:
                copied = read_topic(target_config, replica)
                if len(copied) >= len(sent):
                    break
            time.sleep(1)
        assert [(r.headers.get("message_id"), r.value) for r in copied] == [
            (message_id, value) for _, value, message_id in sent
        ]
    finally:
        try:
            _call(f"{connect_url}/connectors/{name}", "DELETE")
        except urllib.error.HTTPError as exc:  # never created: the POST failed
            assert exc.code == 404, exc
        if replica in admin.list_topics(timeout=10).topics:
            admin.delete_topics([replica])[replica].result(timeout=30)
