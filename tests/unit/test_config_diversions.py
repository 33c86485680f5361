"""``expect:`` and ``diverted:`` (issue 72) as declared: their values, and each mistake as one
line naming the pipeline and the key, at load time."""

from __future__ import annotations

import pytest
from fixtures.declarations import doc, errors_of

from recon.config import parse_pipelines
from recon.config.diversions import PRESETS, DivertedSpec, FieldRef, OriginalHeaders, Predicate

pytestmark = pytest.mark.unit

PREFIX = "pipelines.yaml: pipeline 'payments': "


def only_error(text: str) -> str:
    errors = errors_of(text)
    assert len(errors) == 1, errors
    return errors[0]


def test_a_field_and_its_values_or_a_predicate() -> None:
    cfg = parse_pipelines(doc(expect={"json_field": "type", "in": ["order", 7, True]}))["payments"]
    assert cfg.expect == Predicate("in", FieldRef("json_field", "type"), ("order", "7", "true"))
    nested = {
        "all": [
            {"json_field": "type", "in": ["order"]},
            {"not": {"header": "test", "present": True}},
            {"any": [{"key": True, "not_in": ["x"]}, {"json_field": "region", "absent": True}]},
        ]
    }
    cfg = parse_pipelines(doc(expect=nested))["payments"]
    assert cfg.expect is not None
    assert cfg.expect.fields() == (
        FieldRef("json_field", "type"), FieldRef("header", "test"), FieldRef("key"),
        FieldRef("json_field", "region"),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("expect", "message"),
    [
        (
            {"in": ["order"]},
            "expect: names no field: add json_field: <name>, header: <name> or key: true",
        ),
        (
            {"all": [{"json_field": "type", "in": ["a"]}, {"not_in": ["b"]}]},
            "expect: all[1]: names no field: add json_field: <name>, header: <name> or key: true",
        ),
        (
            {"json_field": "type"},
            "expect: expected one of in, not_in, present, absent beside the field, got none",
        ),
        (
            {"json_field": "type", "in": []},
            "expect: in: expected a non-empty list of values, got a list",
        ),
        (
            {"json_field": "type", "in": [1.5]},
            "expect: in[0]: expected a text, a whole number or a boolean, got a number",
        ),
        ({"field": "type", "in": ["a"]}, "expect: unknown key field: expected "),
        (
            {"json_field": "type", "header": "t", "in": ["a"]},
            "expect: names json_field and header: a leaf reads one field",
        ),
    ],
)
def test_a_wrong_predicate_is_one_line_naming_pipeline_and_key(
    expect: object, message: str
) -> None:
    assert only_error(doc(expect=expect)).startswith(PREFIX + message)


def test_dead_letter_topics_by_preset_headers_or_message_id() -> None:
    cfg = parse_pipelines(doc(diverted={"topics": ["payments.DLT"]}))["payments"]
    assert cfg.diverted == DivertedSpec(
        ("payments.DLT",), None, "spring", OriginalHeaders(*PRESETS["spring"])
    )
    assert cfg.tolerances.max_diverted_ratio == 1.0
    connect = {"topics": ["dlq"], "original": "connect", "connection": "kafka_replica"}
    cfg = parse_pipelines(doc(diverted=connect))["payments"]
    assert cfg.diverted is not None and cfg.diverted.connection == "kafka_replica"
    assert cfg.diverted.headers == OriginalHeaders(*PRESETS["connect"])
    named = {
        "topics": ["r-0", "r-1", "dlt"],
        "original": {"topic": "t", "partition": "p", "offset": "o"},
    }
    cfg = parse_pipelines(doc(diverted=named))["payments"]
    assert cfg.diverted is not None and cfg.diverted.headers == OriginalHeaders("t", "p", "o")
    by_id = {"topics": ["dlt"], "original": "message_id"}
    cfg = parse_pipelines(doc(diverted=by_id, tolerances={"max_diverted_ratio": 0.1}))["payments"]
    assert cfg.diverted is not None and cfg.diverted.headers is None
    assert cfg.tolerances.max_diverted_ratio == 0.1


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"diverted": {"topics": []}}, "diverted.topics: expected at least one"),
        ({"diverted": {"topics": ["a", "a"]}}, "diverted.topics: a is listed twice"),
        (
            {"diverted": {"topics": ["payments"]}},
            "diverted: topics: payments is the pipeline's own topic",
        ),
        (
            {"diverted": {"topics": ["a"], "original": "kafka"}},
            "diverted.original: expected spring, connect, message_id or",
        ),
        (
            {"tolerances": {"max_diverted_ratio": 0.2}},
            "tolerances.max_diverted_ratio: has no effect without diverted",
        ),
    ],
)
def test_a_wrong_diversion_is_one_line_naming_pipeline_and_key(
    changes: dict[str, object], message: str
) -> None:
    assert only_error(doc(**changes)).startswith(PREFIX + message)
