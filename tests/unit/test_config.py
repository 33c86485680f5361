"""Pipeline declarations: how each mistake is reported. One error naming the file, the
pipeline and the key (a wrong key, type or value, a credential, a URI for a connection id, a
file of the wrong shape), every error of a file collected and the list bounded, never in
pydantic's words.

What loads (the files, the values, the defaults): ``tests/unit/test_config_loading.py``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from fixtures.declarations import BASE, DELETE, doc, errors_of

from recon.config import MAX_REPORTED_ERRORS, parse_pipelines
from recon.errors import ConfigError, ReconError

pytestmark = pytest.mark.unit


def only_error(text: str) -> str:
    errors = errors_of(text)
    assert len(errors) == 1, errors
    return errors[0]


def test_config_error_is_a_recon_error() -> None:
    assert issubclass(ConfigError, ReconError)


def test_yaml_syntax_error_reports_the_line() -> None:
    text = "pipelines:\n  payments:\n    semantics: [exactly_once\n    schedule: x\n"
    with pytest.raises(ConfigError, match=r"^pipelines.yaml: line \d+, column \d+: YAML syntax"):
        parse_pipelines(text)


def test_duplicate_pipeline_names_are_refused() -> None:
    body = doc().split("\n", 1)[1]  # the 'payments:' block, indented under 'pipelines:'
    with pytest.raises(ConfigError, match=r"line \d+.*duplicate key 'payments'"):
        parse_pipelines("pipelines:\n" + body + body)


def test_message_id_kind_error_matches_the_documented_form() -> None:
    assert only_error(doc(kafka__message_id={"field": "id"})) == (
        "pipelines.yaml: pipeline 'payments': kafka.message_id: "
        "expected one of header, json_field, key, got field"
    )


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("message_id", "kafka.message_id: expected one of header, json_field, key"),
        ({}, "kafka.message_id: expected one of"),
        ({"header": "a", "key": True}, "(exactly one), got header, key"),
        ({"key": False}, "kafka.message_id.key: expected true"),
        ({"header": ""}, "kafka.message_id.header: must not be empty"),
    ],
)
def test_bad_message_id(spec: Any, needle: str) -> None:
    assert needle in only_error(doc(kafka__message_id=spec))


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"retry": 3}, "pipeline 'payments': retry: unknown key"),
        ({"kafka__group": "x"}, "pipeline 'payments': kafka.group: unknown key"),
        ({"semantics": DELETE}, "pipeline 'payments': semantics: missing required key"),
        ({"schedule": DELETE}, "schedule: missing required key"),
        ({"kafka__topic": DELETE}, "kafka.topic: missing required key"),
        ({"sink__message_id_column": DELETE}, "sink.message_id_column: missing required key"),
        ({"semantics": "exactly-once"}, "semantics: expected one of at_most_once, at_least_once"),
        ({"settle_seconds": "120"}, "settle_seconds: expected a whole number, got a string"),
        ({"settle_seconds": True}, "settle_seconds: expected a whole number, got a boolean"),
        ({"settle_seconds": -1}, "settle_seconds: must be 0 or more"),
        ({"retries": 1.5}, "retries: expected a whole number"),
        ({"retention_days": 0}, "pipeline 'payments': retention_days: must be 1 or more, got 0"),
        ({"retention_days": "30d"}, "retention_days: expected a whole number, got a string"),
        ({"catchup": "yes please"}, "catchup: expected true or false, got a string"),
        ({"tags": "a,b"}, "tags: expected a list of non-empty strings"),
        ({"kafka": ["x"]}, "kafka: expected a mapping, got a list"),
        ({"kafka__topic": "bad topic!"}, "kafka.topic: not a Kafka topic name"),
        ({"sink__table": ""}, "sink.table: must not be empty"),
        ({"sink__table": "public."}, "sink.table: expected 'table' or 'schema.table'"),
        ({"sink__table": "a.b.c"}, "sink.table: expected 'table' or 'schema.table'"),
        ({"sink__message_id_column": " "}, "sink.message_id_column: must not be empty"),
        ({"sink__ingest_seq_column": 7}, "sink.ingest_seq_column: expected a string"),
        ({"tolerances": {"max_loss_ratio": 1.5}}, "max_loss_ratio: must be between 0 and 1"),
        ({"tolerances": {"max_invalid": -2}}, "tolerances.max_invalid: must be 0 or more"),
        ({"tolerances": {"max_lost": 0}}, "tolerances.max_lost: unknown key"),
        ({"tolerances": {"max_loss_ratio": 0.1}}, "exactly_once forbids loss"),
        ({"tolerances": {"max_duplicate_ratio": 0.1}}, "exactly_once forbids duplicates"),
        ({"schedule": "every hour"}, "schedule: expected 5 cron fields"),
        ({"schedule": 15}, "schedule: expected a string, got a number"),
        ({"kafka__start_offsets": "latest"}, "kafka.start_offsets: expected 'earliest'"),
        ({"kafka__start_offsets": {0: -5}}, "kafka.start_offsets.0: an offset must be"),
        ({"kafka__start_offsets": {"x": 5}}, "kafka.start_offsets.x: a partition number"),
    ],
)
def test_each_mistake_names_pipeline_and_key(changes: dict[str, Any], needle: str) -> None:
    error = only_error(doc(**changes))
    assert error.startswith("pipelines.yaml: pipeline 'payments': ")
    assert needle in error


@pytest.mark.parametrize(
    ("changes", "key"),
    [
        ({"sink__password": "hunter2"}, "sink.password"),
        ({"kafka__bootstrap.servers": "127.0.0.1:9092"}, "kafka.bootstrap.servers"),
        ({"kafka__sasl.password": "x"}, "kafka.sasl.password"),
        ({"token": "abc"}, "token"),
    ],
)
def test_credentials_are_refused(changes: dict[str, Any], key: str) -> None:
    error = only_error(doc(**changes))
    assert f"{key}: credentials and connection settings do not belong" in error


def test_connection_must_be_an_id_not_a_uri() -> None:
    error = only_error(doc(sink__connection="postgresql://u:secret@db/sink"))
    assert "sink.connection: expected an Airflow connection id" in error


def test_all_errors_are_collected_and_reported_once() -> None:
    text = doc(semantics="twice", settle_seconds="soon", kafka__message_id={"x": 1}, extra=1)
    errors = errors_of(text)
    assert len(errors) == 4
    with pytest.raises(ConfigError) as info:
        parse_pipelines(text, source="pipelines.yaml")
    message = str(info.value)
    assert message.splitlines()[0] == "pipelines.yaml: 4 problems in the pipeline declarations:"
    assert all(e in message for e in errors)


def test_error_list_is_bounded() -> None:
    body = copy.deepcopy(BASE)
    body.update({f"unknown_{i}": i for i in range(MAX_REPORTED_ERRORS + 7)})
    with pytest.raises(ConfigError) as info:
        parse_pipelines(yaml.safe_dump({"pipelines": {"payments": body}}))
    assert len(info.value.errors) == MAX_REPORTED_ERRORS + 7
    assert str(info.value).endswith("... and 7 more")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("- a\n- b\n", "pipelines.yaml: expected a mapping with the key 'pipelines'"),
        ("pipes: {}\n", "pipelines.yaml: pipes: unknown key"),
        ("pipelines: [a]\n", "pipelines.yaml: pipelines: expected a mapping of pipelines"),
        ("pipelines:\n  'bad name': {}\n", "a pipeline name must be letters"),
        # A name is a directory under the data directory: never one outside it.
        ("pipelines:\n  '..': {}\n", "pipelines...: a pipeline name must be letters"),
        ("pipelines:\n  '.': {}\n", "pipelines..: a pipeline name must be letters"),
        ("pipelines:\n  '.hidden': {}\n", "a pipeline name must be letters"),
        ("pipelines:\n  'a/b': {}\n", "a pipeline name must be letters"),
    ],
)
def test_file_shape(text: str, needle: str) -> None:
    assert any(needle in e for e in errors_of(text))


# Wrong types: each is one error naming the pipeline and the key, never a crash.
@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"retries": "2"}, "retries: expected a whole number, got a string"),
        ({"retries": True}, "retries: expected a whole number, got a boolean"),
        ({"settle_seconds": [1]}, "settle_seconds: expected a whole number, got a list"),
        ({"settle_seconds": {"s": 1}}, "settle_seconds: expected a whole number, got a mapping"),
        ({"settle_seconds": None}, "settle_seconds: expected a whole number, got null"),
        ({"settle_seconds": 1.5}, "settle_seconds: expected a whole number, got a number"),
        ({"sink": ["postgres_sink"]}, "sink: expected a mapping, got a list"),
        ({"sink": "postgres_sink"}, "sink: expected a mapping, got a string"),
        ({"kafka": None}, "kafka: expected a mapping, got null"),
        ({"tolerances": ["max_invalid"]}, "tolerances: expected a mapping, got a list"),
        ({"tolerances": None}, "tolerances: expected a mapping, got null"),
        (
            {"tolerances": {"max_invalid": True}},
            "tolerances.max_invalid: expected a whole number, got a boolean",
        ),
        (
            {"tolerances": {"max_unverifiable": "3"}},
            "tolerances.max_unverifiable: expected a whole number, got a string",
        ),
        (
            {"tolerances": {"max_invalid": 2.5}},
            "tolerances.max_invalid: expected a whole number, got a number",
        ),
        (
            {"tolerances": {"max_duplicate_ratio": True}},
            "tolerances.max_duplicate_ratio: expected a number between 0 and 1, got a boolean",
        ),
        (
            {"tolerances": {"max_duplicate_ratio": "0.1"}},
            "tolerances.max_duplicate_ratio: expected a number between 0 and 1, got a string",
        ),
        (
            {"idempotent_producer": "yes"},
            "idempotent_producer: expected true or false, got a string",
        ),
        ({"idempotent_producer": 1}, "idempotent_producer: expected true or false, got a number"),
        ({"catchup": 0}, "catchup: expected true or false, got a number"),
        ({"tags": [1, 2]}, "tags: expected a list of non-empty strings"),
        ({"tags": {"team": "a"}}, "tags: expected a list of non-empty strings"),
        ({"schedule": ["@daily"]}, "schedule: expected a string, got a list"),
        ({"schedule": True}, "schedule: expected a string, got a boolean"),
        ({"semantics": ["exactly_once"]}, "semantics: expected one of at_most_once"),
        ({"kafka__topic": 5}, "kafka.topic: expected a string, got a number"),
        ({"kafka__topic": {"name": "t"}}, "kafka.topic: expected a string, got a mapping"),
        ({"kafka__connection": 5}, "kafka.connection: expected a string, got a number"),
        ({"kafka__consumer_group": ["g"]}, "kafka.consumer_group: expected a string, got a list"),
        ({"kafka__consumer_group": True}, "kafka.consumer_group: expected a string, got a boolean"),
        ({"kafka__message_id": ["header", "id"]}, "kafka.message_id: expected one of header"),
        ({"kafka__message_id": None}, "kafka.message_id: expected one of header"),
        (
            {"kafka__message_id": {"json_field": 5}},
            "kafka.message_id.json_field: expected a string",
        ),
        ({"kafka__message_id": {"header": ["a"]}}, "kafka.message_id.header: expected a string"),
        ({"kafka__message_id": {"key": "yes"}}, "kafka.message_id.key: expected true"),
        ({"kafka__start_offsets": [0, 5]}, "kafka.start_offsets: expected 'earliest' or a mapping"),
        ({"kafka__start_offsets": 5}, "kafka.start_offsets: expected 'earliest' or a mapping"),
        ({"kafka__start_offsets": {0: "5"}}, "kafka.start_offsets.0: an offset must be a whole"),
        ({"kafka__start_offsets": {0: True}}, "kafka.start_offsets.0: an offset must be a whole"),
        ({"kafka__start_offsets": {True: 5}}, "kafka.start_offsets.True: a partition number"),
        ({"sink__table": ["a"]}, "sink.table: expected a string, got a list"),
        ({"sink__connection": None}, "sink.connection: expected a string, got null"),
        ({"sink__message_id_column": 3}, "sink.message_id_column: expected a string, got a number"),
        (
            {"sink__ingest_seq_column": True},
            "sink.ingest_seq_column: expected a string, got a boolean",
        ),
    ],
)
def test_wrong_types_name_pipeline_and_key(changes: dict[str, Any], message: str) -> None:
    error = only_error(doc(**changes))
    assert error.startswith(f"pipelines.yaml: pipeline 'payments': {message}"), error


@pytest.mark.parametrize(
    ("line", "message"),
    [
        # YAML 1.1 reads yes/no/on/off as booleans: not a number of seconds.
        ("settle_seconds: yes", "settle_seconds: expected a whole number, got a boolean"),
        ("settle_seconds: '120'", "settle_seconds: expected a whole number, got a string"),
        ("retries: 3.0", "retries: expected a whole number, got a number"),
        (
            "idempotent_producer: 'true'",
            "idempotent_producer: expected true or false, got a string",
        ),
        ("schedule: 2026-01-01", "schedule: expected a string, got a date"),
    ],
)
def test_wrong_types_as_written_in_yaml(line: str, message: str) -> None:
    key = line.split(":")[0]
    text = "\n".join(
        f"    {line}" if row.strip().startswith(f"{key}:") else row
        for row in doc(**{key: "PLACEHOLDER"}).splitlines()
    )
    assert only_error(text) == f"pipelines.yaml: pipeline 'payments': {message}"


@pytest.mark.parametrize(
    ("body", "kind"), [("exactly_once", "a string"), ("null", "null"), ("[1, 2]", "a list")]
)
def test_a_pipeline_that_is_not_a_mapping(body: str, kind: str) -> None:
    assert only_error(f"pipelines:\n  payments: {body}\n") == (
        f"pipelines.yaml: pipeline 'payments': expected a mapping, got {kind}"
    )


def test_an_unknown_engine_names_pipeline_and_key() -> None:
    error = only_error(doc(engine="flink"))
    assert "payments" in error and "engine" in error and "flink" in error


def test_an_unknown_key_lists_the_keys_in_declaration_order() -> None:
    assert only_error(doc(retry=3)) == (
        "pipelines.yaml: pipeline 'payments': retry: unknown key (expected one of engine, "
        "semantics, schedule, settle_seconds, kafka, sink, tolerances, latency, payload, "
        "order, idempotent_producer, catchup, retries, retention_days, tags, alerts, repair, "
        "source, expect, diverted, flow)"
    )


def test_a_key_that_is_not_a_string_is_an_unknown_key() -> None:
    text = doc().replace("    semantics:", "    7: seven\n    semantics:", 1)
    assert only_error(text).startswith("pipelines.yaml: pipeline 'payments': 7: unknown key")


def test_a_credential_key_is_refused_whatever_its_case() -> None:
    error = only_error(doc(sink__Password="hunter2"))
    assert "sink.Password: credentials and connection settings do not belong" in error
    assert "hunter2" not in error


def test_the_contract_check_runs_beside_other_mistakes() -> None:
    # The semantic reaches the tolerances as validation context, so a wrong key elsewhere does
    # not hide a tolerance the contract forbids.
    errors = errors_of(doc(settle_seconds="soon", tolerances={"max_loss_ratio": 0.1}))
    assert errors == [
        "pipelines.yaml: pipeline 'payments': settle_seconds: expected a whole number, "
        "got a string",
        "pipelines.yaml: pipeline 'payments': tolerances.max_loss_ratio: exactly_once forbids "
        "loss: only at_most_once may",
    ]


def test_every_bad_partition_is_reported_at_its_own_key() -> None:
    errors = errors_of(doc(kafka__start_offsets={"x": 5, 0: -1, 1: 7}))
    assert [e.split(": ")[2] for e in errors] == ["kafka.start_offsets.x", "kafka.start_offsets.0"]


@pytest.mark.parametrize("kind", ["header", "json_field"])
def test_a_null_id_name_is_refused_at_its_key(kind: str) -> None:
    assert only_error(doc(kafka__message_id={kind: None})) == (
        f"pipelines.yaml: pipeline 'payments': kafka.message_id.{kind}: expected a string, got null"
    )


@pytest.mark.parametrize(
    "changes",
    [
        {"settle_seconds": "x", "retries": None, "catchup": 1, "tags": 3},
        {"kafka": {"topic": 5, "message_id": {"key": 1}, "start_offsets": []}},
        {"sink": {"table": None, "ingest_seq_column": [], "x": 1}, "tolerances": {"a": 1}},
        {"engine": {}, "semantics": 3, "schedule": 4, "idempotent_producer": [], "kafka": "k"},
        {"latency": {"max_seconds": "1", "x": 2}, "sink__time_column": 4},
        {"latency": 7, "tolerances": {"max_late_ratio": []}},
    ],
)
def test_no_message_is_in_pydantics_words(changes: dict[str, Any]) -> None:
    for error in errors_of(doc(**changes)):
        assert error.startswith("pipelines.yaml: pipeline 'payments': "), error
        assert "Input should" not in error and "pydantic" not in error, error


@pytest.mark.parametrize(
    ("columns", "said"),
    [
        ({"message_id": "message_id", "x": "size"}, "sink_columns.x: expected one of message_id"),
        ({"x": "offset"}, "one column must get the message_id"),
        ({"message_id": "message_id", "x": {"json_field": "a", "header": "b"}}, "exactly one"),
        ({}, "at least one"),
    ],
)
def test_a_wrong_repair_column_mapping_is_named(columns: dict[str, Any], said: str) -> None:
    (error,) = errors_of(doc(repair={"sink_columns": columns}))
    assert error.startswith("pipelines.yaml: pipeline 'payments': repair") and said in error, error
