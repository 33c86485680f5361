"""Declaring a pipeline's source (three-way runs, issue 20): ``source:`` and
``tolerances.max_unpublished_ratio``; what loads, and the exact words of each mistake."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.declarations import doc, errors_of

from recon.config import MessageIdSpec, SourceSpec, Tolerances, parse_pipelines

pytestmark = pytest.mark.unit

PREFIX = "pipelines.yaml: pipeline 'payments': "
SOURCE = {
    "connection": "postgres_app",
    "table": "app.outbox",
    "message_id_column": "message_id",
    "time_column": "created_at",
}


def test_a_source_with_its_defaults() -> None:
    config = parse_pipelines(doc(source=SOURCE))["payments"]
    assert config.source == SourceSpec("postgres_app", "app.outbox", "message_id", "created_at")
    assert (config.source.key_column, config.source.horizon_hours) == (None, 168.0)
    assert config.source.table_parts == ("app", "outbox")


def test_an_upstream_topic_as_the_source_carries_the_pipelines_message_id() -> None:
    config = parse_pipelines(doc(source={"connection": "kafka_up", "topic": "orders-raw"}))
    source = config["payments"].source
    assert source is not None and source.is_topic
    assert (source.topic, source.table, source.horizon_hours) == ("orders-raw", None, 168.0)
    assert source.message_id == config["payments"].kafka.message_id
    assert source.name == "topic orders-raw"


def test_an_upstream_topic_may_carry_the_message_id_elsewhere() -> None:
    declared = {"connection": "kafka_up", "topic": "raw", "message_id": {"json_field": "id"},
                "horizon_hours": 24}  # fmt: skip
    source = parse_pipelines(doc(source=declared))["payments"].source
    assert source == SourceSpec(
        "kafka_up", horizon_hours=24.0, topic="raw", message_id=MessageIdSpec("json_field", "id")
    )


def test_at_most_once_may_tolerate_unpublished_messages() -> None:
    text = doc(
        semantics="at_most_once", source={**SOURCE, "key_column": "seq", "horizon_hours": 24},
        tolerances={"max_unpublished_ratio": 0.01},
    )  # fmt: skip
    config = parse_pipelines(text)["payments"]
    assert config.tolerances == Tolerances(max_unpublished_ratio=0.01)
    assert config.source is not None
    assert (config.source.key_column, config.source.horizon_hours) == ("seq", 24.0)


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ({k: v for k, v in SOURCE.items() if k != "time_column"},
         "source: missing required key(s) time_column: a source is an outbox table"),
        ({**SOURCE, "table": " "}, "source.table: must not be empty"),
        ({**SOURCE, "horizon_hours": 0}, "source.horizon_hours:"),
        ({**SOURCE, "password": "x"}, "source.password:"),
        ({**SOURCE, "topic": "upstream"},
         "source: declares topic and table, message_id_column, time_column: a source is an "
         "upstream topic"),
        ({**SOURCE, "message_id": {"header": "id"}},
         "source: message_id: only for a topic source (declare topic)"),
        ({"connection": "kafka_up", "topic": "bad topic"}, "source.topic:"),
        ({"connection": "kafka_up", "topic": "up", "message_id": {"nope": "x"}},
         "source.message_id:"),
        ({"connection": "kafka_up"}, "source: missing required key(s) table, message_id_column"),
    ],
)  # fmt: skip
def test_a_wrong_source_is_named(source: dict[str, Any], error: str) -> None:
    (found,) = errors_of(doc(source=source))
    assert found.startswith(PREFIX + error), found


@pytest.mark.parametrize("semantics", ["at_least_once", "exactly_once"])
def test_only_at_most_once_tolerates_unpublished_messages(semantics: str) -> None:
    text = doc(semantics=semantics, source=SOURCE, tolerances={"max_unpublished_ratio": 0.1})
    assert errors_of(text) == [
        PREFIX + f"tolerances.max_unpublished_ratio: {semantics} forbids unpublished messages: "
        "only at_most_once may"
    ]


def test_an_unpublished_ratio_without_a_source_is_refused() -> None:
    text = doc(semantics="at_most_once", tolerances={"max_unpublished_ratio": 0.1})
    assert errors_of(text) == [
        PREFIX + "tolerances.max_unpublished_ratio: has no effect without source: declare "
        "source, or remove it"
    ]
