"""Declaring an upsert sink's order: ``order.key_column``, ``order.position_column``, the
record's key and position, and ``tolerances.max_out_of_order_ratio``; what loads, and the exact
words of each mistake."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.declarations import doc, errors_of

from recon.config import MessageIdSpec, OrderSpec, Tolerances, parse_pipelines

pytestmark = pytest.mark.unit

PREFIX = "pipelines.yaml: pipeline 'payments': "
ORDER = {"key_column": "account", "position_column": "applied_offset"}


def test_the_record_key_and_its_offset_by_default() -> None:
    config = parse_pipelines(doc(order=ORDER))["payments"]
    assert config.order == OrderSpec(MessageIdSpec("key"), "account", "applied_offset")


@pytest.mark.parametrize("semantics", ["at_most_once", "at_least_once"])
def test_a_json_key_and_a_version_with_a_ratio(semantics: str) -> None:
    order = {**ORDER, "record_key": {"json_field": "account"}, "version_field": "version"}
    text = doc(semantics=semantics, order=order, tolerances={"max_out_of_order_ratio": 0.02})
    config = parse_pipelines(text)["payments"]
    assert config.order == OrderSpec(
        MessageIdSpec("json_field", "account"), "account", "applied_offset", "version"
    )
    assert config.tolerances == Tolerances(max_out_of_order_ratio=0.02)


def test_a_key_in_a_header() -> None:
    config = parse_pipelines(doc(order={**ORDER, "record_key": {"header": "account"}}))["payments"]
    assert config.order is not None
    assert config.order.record_key == MessageIdSpec("header", "account")


@pytest.mark.parametrize(
    ("order", "error"),
    [
        ({"key_column": "account"}, "order.position_column: missing required key (the sink"),
        ({**ORDER, "key_column": " "}, "order.key_column: must not be empty"),
        ({**ORDER, "record_key": {"header": " "}}, "order.record_key.header: must not be empty"),
        ({**ORDER, "version_field": None}, "order.version_field: expected a string, got null"),
        ({**ORDER, "sort": "asc"}, "order.sort: unknown key"),
    ],
)
def test_a_wrong_order_is_named(order: dict[str, Any], error: str) -> None:
    (found,) = errors_of(doc(order=order))
    assert found.startswith(PREFIX + error), found


def test_exactly_once_tolerates_no_stale_overwrite() -> None:
    text = doc(order=ORDER, tolerances={"max_out_of_order_ratio": 0.1})
    assert errors_of(text) == [
        PREFIX + "tolerances.max_out_of_order_ratio: exactly_once forbids stale overwrites: "
        "only at_most_once or at_least_once may"
    ]


def test_an_out_of_order_ratio_without_order_is_refused() -> None:
    text = doc(semantics="at_least_once", tolerances={"max_out_of_order_ratio": 0.1})
    assert errors_of(text) == [
        PREFIX + "tolerances.max_out_of_order_ratio: has no effect without order: declare "
        "order, or remove it"
    ]
