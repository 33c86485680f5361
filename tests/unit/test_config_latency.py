"""Declaring delivery latency: ``sink.time_column``, ``latency.max_seconds`` and
``tolerances.max_late_ratio``, what loads, and the exact words of each mistake."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.declarations import doc, errors_of

from recon.config import LatencySpec, SinkSpec, Tolerances, parse_pipelines
from recon.model.verdicts import SEMANTICS

pytestmark = pytest.mark.unit

PREFIX = "pipelines.yaml: pipeline 'payments': "
#: The declaration with latency declared the way it works: a time column and a bound.
TIMED = {"sink__time_column": "written_at", "latency": {"max_seconds": 30}}

NEEDS_TIME_COLUMN = (
    "latency: needs sink.time_column (the sink column that holds when the consumer wrote each "
    "row): without it there is no latency to bound"
)
NEEDS_LATENCY = (
    "tolerances.max_late_ratio: has no effect without latency: declare latency.max_seconds "
    "(with sink.time_column), or remove it"
)


# --- accepted ------------------------------------------------------------------------------------


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_latency_with_a_time_column_and_a_late_ratio_loads(semantics: str) -> None:
    text = doc(semantics=semantics, tolerances={"max_late_ratio": 0.01}, **TIMED)
    config = parse_pipelines(text)["payments"]
    assert config.sink == SinkSpec(
        "postgres_sink", "public.payments", "message_id", time_column="written_at"
    )
    assert config.latency == LatencySpec(30.0)
    assert isinstance(config.latency.max_seconds, float)
    assert config.tolerances == Tolerances(max_late_ratio=0.01)


def test_a_fractional_bound_is_kept() -> None:
    config = parse_pipelines(doc(**{**TIMED, "latency": {"max_seconds": 0.25}}))["payments"]
    assert config.latency == LatencySpec(0.25)


def test_a_time_column_alone_measures_latency_without_judging_it() -> None:
    # Percentiles are reported for every run; no bound means no message is late.
    config = parse_pipelines(doc(sink__time_column="written_at"))["payments"]
    assert (config.sink.time_column, config.latency) == ("written_at", None)
    assert config.tolerances.max_late_ratio == 0.0


def test_a_null_time_column_means_none() -> None:
    assert parse_pipelines(doc(sink__time_column=None))["payments"].sink.time_column is None


def test_a_zero_late_ratio_without_latency_is_what_leaving_it_out_means() -> None:
    config = parse_pipelines(doc(tolerances={"max_late_ratio": 0}))["payments"]
    assert config.tolerances == Tolerances()


def test_latency_from_a_shared_anchor() -> None:
    text = """
x-latency: &latency {max_seconds: 5}
pipelines:
  payments:
    semantics: at_least_once
    schedule: null
    settle_seconds: 0
    kafka: {connection: k, topic: t, consumer_group: g, message_id: {key: true}}
    sink: {connection: s, table: t, message_id_column: id, time_column: "Written At"}
    latency: *latency
    tolerances: {max_late_ratio: 0.5}
"""
    config = parse_pipelines(text)["payments"]
    assert (config.sink.time_column, config.latency) == ("Written At", LatencySpec(5.0))


# --- refused, word for word ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"latency": {"max_seconds": 30}}, NEEDS_TIME_COLUMN),
        ({"latency": {"max_seconds": 30}, "sink__time_column": None}, NEEDS_TIME_COLUMN),
        ({"tolerances": {"max_late_ratio": 0.1}}, NEEDS_LATENCY),
        (
            {"tolerances": {"max_late_ratio": 0.1}, "sink__time_column": "written_at"},
            NEEDS_LATENCY,
        ),
        (
            {**TIMED, "latency": {}},
            "latency.max_seconds: missing required key (the bound in seconds: a message "
            "delivered later than this is late)",
        ),
        (
            {**TIMED, "latency": {"max_seconds": 0}},
            "latency.max_seconds: must be a positive, finite number of seconds, got 0",
        ),
        (
            {**TIMED, "latency": {"max_seconds": -1.5}},
            "latency.max_seconds: must be a positive, finite number of seconds, got -1.5",
        ),
        (
            {**TIMED, "latency": {"max_seconds": float("inf")}},
            "latency.max_seconds: must be a positive, finite number of seconds, got inf",
        ),
        (
            {**TIMED, "latency": {"max_seconds": float("nan")}},
            "latency.max_seconds: must be a positive, finite number of seconds, got nan",
        ),
        (
            {**TIMED, "latency": {"max_seconds": "30"}},
            "latency.max_seconds: expected a positive number of seconds, got a string",
        ),
        (
            {**TIMED, "latency": {"max_seconds": True}},
            "latency.max_seconds: expected a positive number of seconds, got a boolean",
        ),
        (
            {**TIMED, "latency": {"max_seconds": None}},
            "latency.max_seconds: expected a positive number of seconds, got null",
        ),
        (
            {**TIMED, "latency": {"max_seconds": 30, "p99": 10}},
            "latency.p99: unknown key (expected one of max_seconds)",
        ),
        ({**TIMED, "latency": None}, "latency: expected a mapping, got null"),
        ({**TIMED, "latency": 30}, "latency: expected a mapping, got a number"),
        ({**TIMED, "latency": [30]}, "latency: expected a mapping, got a list"),
        ({"sink__time_column": ""}, "sink.time_column: must not be empty"),
        ({"sink__time_column": "  "}, "sink.time_column: must not be empty"),
        ({"sink__time_column": 5}, "sink.time_column: expected a string, got a number"),
        ({"sink__time_column": ["a"]}, "sink.time_column: expected a string, got a list"),
        (
            {**TIMED, "tolerances": {"max_late_ratio": 1.5}},
            "tolerances.max_late_ratio: must be between 0 and 1, got 1.5",
        ),
        (
            {**TIMED, "tolerances": {"max_late_ratio": "0.1"}},
            "tolerances.max_late_ratio: expected a number between 0 and 1, got a string",
        ),
    ],
)
def test_each_mistake_is_one_line_naming_pipeline_and_key(
    changes: dict[str, Any], message: str
) -> None:
    assert errors_of(doc(**changes)) == [PREFIX + message]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        # YAML 1.1 reads yes as a boolean and .inf as infinity: neither is a bound.
        ("max_seconds: yes", "expected a positive number of seconds, got a boolean"),
        ("max_seconds: '30'", "expected a positive number of seconds, got a string"),
        ("max_seconds: .inf", "must be a positive, finite number of seconds, got inf"),
    ],
)
def test_bounds_as_written_in_yaml(line: str, message: str) -> None:
    text = doc(**TIMED).replace("max_seconds: 30", line)
    assert errors_of(text) == [f"{PREFIX}latency.max_seconds: {message}"]


def test_the_latency_checks_run_beside_other_mistakes() -> None:
    # Each check reads the other keys from the raw declaration: a wrong key elsewhere hides none.
    errors = errors_of(doc(settle_seconds="soon", latency={"max_seconds": 30}))
    assert errors == [
        f"{PREFIX}settle_seconds: expected a whole number, got a string",
        PREFIX + NEEDS_TIME_COLUMN,
    ]
    errors = errors_of(doc(kafka__topic="bad topic!", tolerances={"max_late_ratio": 0.2}))
    assert errors == [
        f"{PREFIX}kafka.topic: not a Kafka topic name (letters, digits, '.', '_', '-')",
        PREFIX + NEEDS_LATENCY,
    ]


def test_a_wrong_time_column_or_sink_is_reported_once_at_its_own_key() -> None:
    # The time column is declared, only wrong: no second problem at 'latency'.
    assert errors_of(doc(sink__time_column=7, latency={"max_seconds": 30})) == [
        f"{PREFIX}sink.time_column: expected a string, got a number"
    ]
    # The sink is no mapping: whether it has a time column is unknown, so 'latency' says nothing.
    assert errors_of(doc(sink="postgres_sink", latency={"max_seconds": 30})) == [
        f"{PREFIX}sink: expected a mapping, got a string"
    ]


def test_a_declared_but_wrong_latency_does_not_also_refuse_the_ratio() -> None:
    text = doc(sink__time_column="t", latency=[1], tolerances={"max_late_ratio": 0.1})
    assert errors_of(text) == [f"{PREFIX}latency: expected a mapping, got a list"]


# --- the semantic check follows the contract table ------------------------------------------------


def test_a_semantic_the_table_forbids_late_for_refuses_the_ratio(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Today every semantic tolerates late up to max_late_ratio; the configuration asks the table,
    so a semantic whose cell forbids late refuses the ratio like exactly_once refuses loss."""
    from recon.contract.table import CONTRACT, forbidden

    text = doc(tolerances={"max_late_ratio": 0.1}, **TIMED)
    assert parse_pipelines(text)["payments"].tolerances.max_late_ratio == 0.1
    monkeypatch.setitem(CONTRACT["exactly_once"], "late", forbidden("no"))
    assert errors_of(text) == [
        f"{PREFIX}tolerances.max_late_ratio: exactly_once forbids late deliveries: only "
        "at_most_once or at_least_once may"
    ]
    for semantics in ("at_most_once", "at_least_once"):
        monkeypatch.setitem(CONTRACT[semantics], "late", forbidden("no"))
    assert errors_of(text) == [
        f"{PREFIX}tolerances.max_late_ratio: exactly_once forbids late deliveries: no semantic "
        "tolerates it"
    ]
    # 0 is never refused: it is what leaving the key out means.
    assert parse_pipelines(doc(tolerances={"max_late_ratio": 0}, **TIMED))["payments"]


def test_loss_is_still_refused_under_exactly_once_with_latency_declared() -> None:
    assert errors_of(doc(tolerances={"max_loss_ratio": 0.1, "max_late_ratio": 0.1}, **TIMED)) == [
        f"{PREFIX}tolerances.max_loss_ratio: exactly_once forbids loss: only at_most_once may"
    ]
