"""Pipeline declarations: what loads, and how each mistake is reported."""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from fixtures.declarations import BASE, DELETE, doc, errors_of

from recon.config import (
    MAX_REPORTED_ERRORS,
    KafkaSource,
    MessageIdSpec,
    PipelineConfig,
    SinkSpec,
    SourceSpec,
    Tolerances,
    default_pipelines_path,
    load_pipeline_dir,
    load_pipelines,
    parse_pipelines,
)
from recon.errors import ConfigError, ReconError

pytestmark = pytest.mark.unit

REPO_ROOT = Path(__file__).resolve().parents[2]


def only_error(text: str) -> str:
    errors = errors_of(text)
    assert len(errors) == 1, errors
    return errors[0]


def test_the_example_file_loads() -> None:
    pipelines = load_pipelines(REPO_ROOT / "pipelines.example.yaml")
    assert list(pipelines) == ["payments", "clickstream"]
    payments = pipelines["payments"]
    assert payments == PipelineConfig(
        name="payments",
        semantics="exactly_once",
        schedule="*/15 * * * *",
        settle_seconds=120,
        kafka=KafkaSource(
            connection="kafka_default",
            topic="payments",
            consumer_group="payments-sink",
            message_id=MessageIdSpec("header", "message_id"),
        ),
        sink=SinkSpec(
            connection="postgres_sink",
            table="public.payments",
            message_id_column="message_id",
            ingest_seq_column="id",
        ),
        tolerances=Tolerances(),
        idempotent_producer=True,
        engine="local",
        source=SourceSpec(
            connection="postgres_app",
            table="app.payments_outbox",
            message_id_column="message_id",
            time_column="created_at",
            key_column="seq",
        ),
    )
    assert payments.sink.table_parts == ("public", "payments")
    clicks = pipelines["clickstream"]
    assert clicks.semantics == "at_least_once"
    assert clicks.kafka.message_id == MessageIdSpec("json_field", "event_id")
    assert clicks.kafka.start_offsets == "earliest"
    assert clicks.tolerances == Tolerances(max_duplicate_ratio=0.01, max_invalid=10)
    assert (clicks.retries, clicks.catchup, clicks.tags) == (1, False, ("analytics",))
    assert (clicks.retention_days, payments.retention_days) == (90, None)


def test_defaults() -> None:
    config = parse_pipelines(doc())["payments"]
    assert config.tolerances == Tolerances(0.0, 0.0, 0, 0, 0.0)
    assert (config.latency, config.sink.time_column) == (None, None)
    assert (config.idempotent_producer, config.catchup, config.retries, config.tags) == (
        False,
        False,
        2,
        (),
    )
    assert config.kafka.start_offsets is None
    assert config.sink.ingest_seq_column is None
    assert (config.sink.keep_first_by, config.sink.keep_order) == (None, None)


def test_a_repair_keeps_the_first_row_by_the_declared_column() -> None:
    sink = parse_pipelines(doc(sink__ingest_seq_column="id"))["payments"].sink
    assert sink.keep_order == "id"
    sink = parse_pipelines(doc(sink__ingest_seq_column="id", sink__keep_first_by="written_at"))[
        "payments"].sink  # fmt: skip
    assert (sink.keep_first_by, sink.keep_order) == ("written_at", "written_at")
    (error,) = errors_of(doc(sink__keep_first_by=""))
    assert "sink.keep_first_by" in error, error


def test_path_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(doc())
    monkeypatch.setenv("RECON_PIPELINES", str(path))
    assert list(load_pipelines()) == ["payments"]


def test_default_path_is_repo_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pipelines.yaml").write_text(doc())
    monkeypatch.delenv("RECON_PIPELINES", raising=False)
    monkeypatch.setenv("RECON_ROOT", str(tmp_path))
    assert list(load_pipelines()) == ["payments"]


def test_a_directory_adds_every_yaml_file_with_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "b.yaml").write_text(doc().replace("payments:", "second:", 1))
    (tmp_path / "a.yaml").write_text(doc())
    (tmp_path / "notes.txt").write_text("not a pipeline file")
    monkeypatch.setenv("RECON_PIPELINES_DIR", str(tmp_path))
    found = [(Path(path).name, cfg.name) for path, cfg in load_pipeline_dir()]
    assert found == [("a.yaml", "payments"), ("b.yaml", "second")]
    monkeypatch.setenv("RECON_PIPELINES_DIR", str(tmp_path / "absent"))
    assert load_pipeline_dir() == []


def test_declared_pipelines_name_the_file_of_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from recon.config import declared_in_file, declared_pipelines

    main = tmp_path / "main.yaml"
    main.write_text(doc())
    folder = tmp_path / "more"
    folder.mkdir()
    (folder / "b.yaml").write_text(doc().replace("payments:", "second:", 1))
    monkeypatch.setenv("RECON_PIPELINES_DIR", str(folder))
    assert declared_pipelines(main) == {"payments": str(main), "second": str(folder / "b.yaml")}
    # No pipeline file (every pipeline in the folder): the folder's alone.
    assert declared_in_file(tmp_path / "absent.yaml") == {}
    assert declared_pipelines(tmp_path / "absent.yaml") == {"second": str(folder / "b.yaml")}
    (folder / "c.yaml").write_text(doc())
    with pytest.raises(ConfigError, match="c.yaml: pipeline 'payments' is already declared in"):
        declared_pipelines(main)


def test_a_name_declared_twice_names_both_files(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(doc())
    with pytest.raises(
        ConfigError, match="a.yaml: pipeline 'payments' is already declared in main"
    ):
        load_pipeline_dir(tmp_path, taken={"payments": "main.yaml"})
    (tmp_path / "b.yaml").write_text(doc())
    with pytest.raises(
        ConfigError, match="b.yaml: pipeline 'payments' is already declared in .*a.yaml"
    ):
        load_pipeline_dir(tmp_path)


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError, match="nope.yaml: cannot read the pipeline file"):
        load_pipelines(missing)


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


ANCHORED = """
x-defaults: &defaults
  semantics: at_least_once
  schedule: "@daily"
  settle_seconds: 60
  kafka: &kafka {connection: kafka_default, topic: orders, consumer_group: orders-sink,
                 message_id: {key: true}}
  sink: &sink {connection: postgres_sink, table: orders, message_id_column: id}
pipelines:
  orders:
    <<: *defaults
  refunds:
    <<: *defaults
    settle_seconds: 5
    kafka: {<<: *kafka, topic: refunds, consumer_group: refunds-sink}
    sink: {<<: *sink, table: refunds}
"""


def test_anchors_and_overrides() -> None:
    pipelines = parse_pipelines(ANCHORED)
    assert pipelines["orders"].settle_seconds == 60
    refunds = pipelines["refunds"]
    assert (refunds.semantics, refunds.settle_seconds) == ("at_least_once", 5)
    assert (refunds.kafka.topic, refunds.kafka.message_id) == ("refunds", MessageIdSpec("key"))
    assert refunds.sink.table == "refunds"


def test_message_id_kind_error_matches_the_documented_form() -> None:
    assert only_error(doc(kafka__message_id={"field": "id"})) == (
        "pipelines.yaml: pipeline 'payments': kafka.message_id: "
        "expected one of header, json_field, key, got field"
    )


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"json_field": "id"}, MessageIdSpec("json_field", "id")),
        ({"key": True}, MessageIdSpec("key", None)),
    ],
)
def test_message_id_kinds(spec: dict[str, Any], expected: MessageIdSpec) -> None:
    assert parse_pipelines(doc(kafka__message_id=spec))["payments"].kafka.message_id == expected


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


def test_quoted_identifiers_are_allowed() -> None:
    config = parse_pipelines(doc(sink__table="My Schema.Order-Lines", sink__message_id_column="Id"))
    assert config["payments"].sink.table_parts == ("My Schema", "Order-Lines")


def test_start_offsets_per_partition() -> None:
    config = parse_pipelines(doc(kafka__start_offsets={0: 10, "1": 20}))["payments"]
    assert dict(config.kafka.start_offsets or {}) == {0: 10, 1: 20}


def test_null_ingest_seq_column_means_none() -> None:
    assert (
        parse_pipelines(doc(sink__ingest_seq_column=None))["payments"].sink.ingest_seq_column
        is None
    )


def test_manual_schedule() -> None:
    assert parse_pipelines(doc(schedule=None))["payments"].schedule is None


def test_loss_tolerance_for_at_most_once() -> None:
    text = doc(semantics="at_most_once", tolerances={"max_loss_ratio": 0.05})
    assert parse_pipelines(text)["payments"].tolerances.max_loss_ratio == 0.05


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


def test_empty_pipelines() -> None:
    assert parse_pipelines("pipelines:\n") == {}


def test_no_airflow_import() -> None:
    # The domain package must load without Airflow: check in a clean interpreter.
    import subprocess
    import sys

    code = (
        "import sys, recon.config, recon.contract.evaluate, recon.verdicts; "
        "print('airflow' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    assert out.stdout.strip() == "False"


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


def test_the_engine_is_spark_unless_declared() -> None:
    assert parse_pipelines(doc())["payments"].engine == "spark"
    assert parse_pipelines(doc(engine="local"))["payments"].engine == "local"


def test_the_default_file_is_at_the_root_of_this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RECON_PIPELINES", raising=False)
    monkeypatch.delenv("RECON_ROOT", raising=False)
    assert default_pipelines_path() == str(REPO_ROOT / "pipelines.yaml")


# Every name other modules, DAGs, Spark apps, benches and tests import from recon.config.
PUBLIC_NAMES = (
    "KafkaSource",
    "MessageIdSpec",
    "OrderSpec",
    "PayloadSpec",
    "PipelineConfig",
    "SinkSpec",
    "Tolerances",
    "MAX_REPORTED_ERRORS",
    "cron_problem",
    "default_pipelines_path",
    "load_pipeline_dir",
    "load_pipelines",
    "parse_pipelines",
    "ENGINES",
    "ENV_VAR",
    "DIR_ENV_VAR",
)


def test_public_names_stay_importable_from_the_package() -> None:
    import recon.config

    assert [n for n in PUBLIC_NAMES if not hasattr(recon.config, n)] == []
    assert [n for n in recon.config.__all__ if not hasattr(recon.config, n)] == []


def test_the_schema_declares_exactly_the_fields_of_the_values() -> None:
    from dataclasses import fields

    from recon.config.model import MESSAGE_ID_KINDS, LatencySpec, OrderSpec, PayloadSpec
    from recon.config.schema import (
        KafkaDecl,
        LatencyDecl,
        MessageIdDecl,
        OrderDecl,
        PayloadDecl,
        PipelineDecl,
        SinkDecl,
        TolerancesDecl,
    )

    def names(value_class: type) -> set[str]:
        return {f.name for f in fields(value_class)}

    assert set(PipelineDecl.model_fields) == names(PipelineConfig) - {"name"}
    assert set(KafkaDecl.model_fields) == names(KafkaSource)
    assert set(SinkDecl.model_fields) == names(SinkSpec)
    assert set(TolerancesDecl.model_fields) == names(Tolerances)
    assert set(LatencyDecl.model_fields) == names(LatencySpec)
    assert set(PayloadDecl.model_fields) == names(PayloadSpec)
    assert set(OrderDecl.model_fields) == names(OrderSpec)
    assert tuple(MessageIdDecl.model_fields) == MESSAGE_ID_KINDS


def test_an_unknown_key_lists_the_keys_in_declaration_order() -> None:
    assert only_error(doc(retry=3)) == (
        "pipelines.yaml: pipeline 'payments': retry: unknown key (expected one of engine, "
        "semantics, schedule, settle_seconds, kafka, sink, tolerances, latency, payload, "
        "order, idempotent_producer, catchup, retries, retention_days, tags, alerts, repair, "
        "source)"
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


def test_start_offsets_are_read_only() -> None:
    offsets = parse_pipelines(doc(kafka__start_offsets={0: 10}))["payments"].kafka.start_offsets
    assert isinstance(offsets, Mapping)
    with pytest.raises(TypeError):
        offsets[0] = 11  # type: ignore[index]


@pytest.mark.parametrize("kind", ["header", "json_field"])
def test_a_null_id_name_is_refused_at_its_key(kind: str) -> None:
    assert only_error(doc(kafka__message_id={kind: None})) == (
        f"pipelines.yaml: pipeline 'payments': kafka.message_id.{kind}: expected a string, got null"
    )


def test_the_schedule_is_kept_as_declared() -> None:
    assert parse_pipelines(doc(schedule="@quarterly"))["payments"].schedule == "@quarterly"
    assert parse_pipelines(doc(schedule="@continuous"))["payments"].schedule == "@continuous"


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


def test_a_repair_may_write_lost_rows_from_a_column_mapping() -> None:
    columns = {"message_id": "message_id", "kafka_offset": "offset", "amount": {"json_field": "a"},
               "trace": {"header": "trace-id"}}  # fmt: skip
    config = parse_pipelines(doc(repair={"sink_columns": columns}))["payments"]
    assert config.repair is not None
    assert config.repair.sink_columns == (
        ("message_id", "message_id", None), ("kafka_offset", "offset", None),
        ("amount", "json_field", "a"), ("trace", "header", "trace-id"),
    )  # fmt: skip
    assert parse_pipelines(doc())["payments"].repair is None


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
