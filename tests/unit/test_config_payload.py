"""Declaring payload consistency: ``payload.fields`` or ``payload.sha256_column``, and
``tolerances.max_mismatched_ratio``; what loads, and the exact words of each mistake."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.declarations import doc, errors_of

from recon.config import PayloadSpec, Tolerances, parse_pipelines
from recon.config.model import SHA256_FIELD

pytestmark = pytest.mark.unit

PREFIX = "pipelines.yaml: pipeline 'payments': "
EXACTLY_ONE = "expected exactly one of fields ({json field: sink column}) and sha256_column"


@pytest.mark.parametrize("semantics", ["at_most_once", "at_least_once"])
def test_fields_load_in_their_order_with_a_mismatch_ratio(semantics: str) -> None:
    text = doc(
        semantics=semantics,
        payload={"fields": {"seq": "seq", "customer.id": "Customer Id"}},
        tolerances={"max_mismatched_ratio": 0.01},
    )
    config = parse_pipelines(text)["payments"]
    assert config.payload == PayloadSpec((("seq", "seq"), ("customer.id", "Customer Id")))
    assert config.payload.compared == ("seq", "customer.id")
    assert config.payload.columns == ("seq", "Customer Id")
    assert config.tolerances == Tolerances(max_mismatched_ratio=0.01)


def test_a_hash_column_compares_the_whole_value() -> None:
    config = parse_pipelines(doc(payload={"sha256_column": "payload_sha256"}))["payments"]
    assert config.payload == PayloadSpec(sha256_column="payload_sha256")
    assert config.payload.compared == (SHA256_FIELD,)
    assert config.payload.columns == ("payload_sha256",)


def test_no_payload_compares_nothing() -> None:
    assert parse_pipelines(doc())["payments"].payload is None


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        ({}, EXACTLY_ONE),
        ({"fields": {"a": "a"}, "sha256_column": "h"}, EXACTLY_ONE),
        ({"fields": {}}, "fields: expected at least one {json field: sink column}"),
        ({"fields": {"a": " "}}, "fields.a: must not be empty"),
        ({"sha256_column": ""}, "sha256_column: must not be empty"),
        ({"sha256_column": 7}, "sha256_column: expected a string"),
        ({"fields": ["a", "b"]}, "fields: expected a mapping"),
        ({"hash": "md5"}, "hash: unknown key (expected one of fields, sha256_column)"),
    ],
)
def test_a_wrong_payload_is_named(payload: Any, error: str) -> None:
    (found,) = errors_of(doc(payload=payload))
    assert found.startswith(PREFIX + "payload")
    assert error in found, found


def test_a_null_payload_is_refused() -> None:
    assert errors_of(doc(payload=None)) == [PREFIX + "payload: expected a mapping, got null"]


def test_exactly_once_tolerates_no_mismatch() -> None:
    text = doc(payload={"sha256_column": "h"}, tolerances={"max_mismatched_ratio": 0.1})
    assert errors_of(text) == [
        PREFIX + "tolerances.max_mismatched_ratio: exactly_once forbids mismatched deliveries: "
        "only at_most_once or at_least_once may"
    ]


def test_a_mismatch_ratio_without_payload_is_refused() -> None:
    text = doc(semantics="at_least_once", tolerances={"max_mismatched_ratio": 0.1})
    assert errors_of(text) == [
        PREFIX + "tolerances.max_mismatched_ratio: has no effect without payload: declare "
        "payload, or remove it"
    ]


def test_a_zero_mismatch_ratio_without_payload_is_what_leaving_it_out_means() -> None:
    config = parse_pipelines(doc(tolerances={"max_mismatched_ratio": 0}))["payments"]
    assert config.tolerances == Tolerances()
