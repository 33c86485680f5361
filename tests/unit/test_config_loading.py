"""Pipeline declarations: what loads. The pipeline file (the example, a path from the
environment, the default at the checkout's root, a folder of more files, which file declares each
pipeline, a file missing or a name declared twice), YAML anchors, the value each key gives and its
default, and the names ``recon.config`` exports; it imports without Airflow.

How each mistake in a declaration is reported: ``tests/unit/test_config.py``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from fixtures.declarations import doc, errors_of

from recon.config import (
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
from recon.errors import ConfigError

pytestmark = pytest.mark.unit


REPO_ROOT = Path(__file__).resolve().parents[2]


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


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"json_field": "id"}, MessageIdSpec("json_field", "id")),
        ({"key": True}, MessageIdSpec("key", None)),
    ],
)
def test_message_id_kinds(spec: dict[str, Any], expected: MessageIdSpec) -> None:
    assert parse_pipelines(doc(kafka__message_id=spec))["payments"].kafka.message_id == expected


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


def test_empty_pipelines() -> None:
    assert parse_pipelines("pipelines:\n") == {}


def test_no_airflow_import() -> None:
    # The domain package must load without Airflow: check in a clean interpreter.
    import subprocess
    import sys

    code = (
        "import sys, recon.config, recon.contract.evaluate, recon.model.verdicts; "
        "print('airflow' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    assert out.stdout.strip() == "False"


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


def test_start_offsets_are_read_only() -> None:
    offsets = parse_pipelines(doc(kafka__start_offsets={0: 10}))["payments"].kafka.start_offsets
    assert isinstance(offsets, Mapping)
    with pytest.raises(TypeError):
        offsets[0] = 11  # type: ignore[index]


def test_the_schedule_is_kept_as_declared() -> None:
    assert parse_pipelines(doc(schedule="@quarterly"))["payments"].schedule == "@quarterly"
    assert parse_pipelines(doc(schedule="@continuous"))["payments"].schedule == "@continuous"


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
