"""A Kafka topic as a pipeline's sink (``sink: {kind: kafka, connection, topic, message_id}``,
issue 73): what loads, and each mistake named by pipeline and key."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.declarations import doc, errors_of

from recon.config import parse_pipelines
from recon.config.model import MessageIdSpec

pytestmark = pytest.mark.unit

KAFKA_SINK = {
    "kind": "kafka",
    "connection": "kafka_replica",
    "topic": "recon.payments",
    "message_id": {"header": "message_id"},
}


def test_a_kafka_sink_loads_with_its_topic_and_message_id() -> None:
    sink = parse_pipelines(doc(sink=KAFKA_SINK))["payments"].sink
    assert sink.is_kafka and sink.kind == "kafka"
    assert (sink.connection, sink.topic) == ("kafka_replica", "recon.payments")
    assert sink.message_id == MessageIdSpec("header", "message_id")
    assert (sink.table, sink.message_id_column) == ("", "")


def test_a_table_sink_is_kind_postgres_by_default() -> None:
    sink = parse_pipelines(doc())["payments"].sink
    assert (sink.kind, sink.is_kafka, sink.topic, sink.message_id) == (
        "postgres",
        False,
        None,
        None,
    )
    explicit = parse_pipelines(doc(sink__kind="postgres"))["payments"].sink
    assert explicit == sink


@pytest.mark.parametrize(
    ("sink", "said"),
    [
        ({**KAFKA_SINK, "kind": "s3"}, "sink.kind: expected one of postgres, kafka, got 's3'"),
        (
            {k: v for k, v in KAFKA_SINK.items() if k != "topic"},
            "sink.topic: missing required key (a kafka sink names its topic)",
        ),
        (
            {k: v for k, v in KAFKA_SINK.items() if k != "message_id"},
            "sink.message_id: missing required key (a kafka sink names its message_id)",
        ),
        (
            {**KAFKA_SINK, "table": "public.payments"},
            "sink.table: belongs to a postgres sink (kind: postgres); this sink is kind: kafka",
        ),
        ({**KAFKA_SINK, "topic": "bad topic!"}, "sink.topic:"),
        ({**KAFKA_SINK, "message_id": {"column": "x"}}, "sink.message_id: expected one of"),
        ({**KAFKA_SINK, "connection": "kafka://h:9092"}, "sink.connection:"),
        ({**KAFKA_SINK, "time_column": "written_at"}, "sink.time_column: applies to a PostgreSQL"),
        ({**KAFKA_SINK, "incremental": "full"}, "sink.incremental: applies to a PostgreSQL"),
    ],
)
def test_each_mistake_names_pipeline_and_key(sink: dict[str, Any], said: str) -> None:
    errors = errors_of(doc(sink=sink))
    assert len(errors) == 1, errors
    assert "pipeline 'payments'" in errors[0] and said in errors[0], errors[0]


def test_topic_on_a_table_sink_is_named() -> None:
    errors = errors_of(doc(sink__topic="payments-copy"))
    assert len(errors) == 1, errors
    assert (
        "sink.topic: belongs to a kafka sink (kind: kafka); this sink is kind: postgres"
        in (errors[0])
    )
