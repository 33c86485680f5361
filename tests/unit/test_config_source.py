"""Declaring a pipeline's source (three-way runs, issue 20): ``source:`` and
``tolerances.max_unpublished_ratio``; what loads, and the exact words of each mistake."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.declarations import doc, errors_of

from recon.config import SourceSpec, Tolerances, parse_pipelines

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
         "source.time_column: missing required key"),
        ({**SOURCE, "table": " "}, "source.table: must not be empty"),
        ({**SOURCE, "horizon_hours": 0}, "source.horizon_hours:"),
        ({**SOURCE, "password": "x"}, "source.password:"),
        ({**SOURCE, "topic": "upstream"}, "source.topic: unknown key"),
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
