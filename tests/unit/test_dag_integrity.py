"""Every DAG file imports cleanly and fast, wires only tasks, and every DAG has tags and retries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DAGS = ROOT / "dags"
# recon.repair and recon.store: the repair DAG's task imports them when it runs, never a parse.
HEAVY = (
    "pyspark", "confluent_kafka", "great_expectations", "psycopg2", "recon.run.steps",
    "recon.repair", "recon.store",
)  # fmt: skip
DEMO_DAGS = {
    "recon_orders_at_most_once",
    "recon_clicks_at_least_once",
    "recon_payments_exactly_once",
    "recon_ledger_broken_exactly_once",
    "recon_shipments_concurrent_writers",
    "recon_refunds_outbox_exactly_once",
    "recon_stock_compacted_changelog",
}


@pytest.fixture(scope="module")
def dagbag():  # type: ignore[no-untyped-def]
    os.environ.setdefault("RECON_PIPELINES", str(ROOT / "demo" / "pipelines.yaml"))
    sys.path.insert(0, str(ROOT / "plugins"))
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(DAGS))


REPAIR_DAGS = {d.replace("recon_", "recon_repair_", 1) for d in DEMO_DAGS}
#: The demo's pipelines that declare retention_days.
PRUNED_DAGS = {"recon_clicks_at_least_once"}


def test_every_dag_file_imports(dagbag) -> None:  # type: ignore[no-untyped-def]
    assert dagbag.import_errors == {}
    assert DEMO_DAGS | REPAIR_DAGS | {"recon_stack_check"} <= set(dagbag.dag_ids)


def test_every_pipeline_has_a_manual_repair_dag_that_takes_a_plan_id(dagbag) -> None:  # type: ignore[no-untyped-def]
    from airflow.sdk.exceptions import ParamValidationError

    from recon_airflow.repair import ApplyRepairOperator

    for dag_id in sorted(REPAIR_DAGS):
        dag = dagbag.get_dag(dag_id)
        pipeline = dag_id.removeprefix("recon_repair_")
        assert dag.schedule is None and not dag.catchup, dag_id  # manual trigger only
        assert dag.max_active_runs == 1 and "repair" in dag.tags
        param = dag.params.get_param("plan_id")
        assert param.schema["type"] == "string" and not param.has_value  # required
        with pytest.raises(ParamValidationError, match="plan_id"):
            dag.params.validate()  # a trigger without a plan id is refused by Airflow
        (task,) = dag.tasks
        assert isinstance(task, ApplyRepairOperator) and task.task_id == "apply_plan"
        assert task.pipeline == pipeline and task.plan_id == "{{ params.plan_id }}"
        assert "plan_id" in task.template_fields
        assert (
            task.pipelines_file
            == dagbag.get_dag(f"recon_{pipeline}").get_task("reconcile").pipelines_file
        )  # the same YAML as the pipeline's own DAG


def test_every_dag_has_tags_and_retries(dagbag) -> None:  # type: ignore[no-untyped-def]
    for dag_id in dagbag.dag_ids:
        dag = dagbag.get_dag(dag_id)
        assert dag.tags, f"{dag_id} has no tags"
        # Declared for every task (a task may set its own), not left to Airflow's configured
        # default: a task's ``retries`` is never None, so the DAG's own arguments are what tell.
        assert "retries" in (dag.default_args or {}), f"{dag_id} declares no retries"
        if dag_id in DEMO_DAGS:
            pruned = ["prune"] if dag_id in PRUNED_DAGS else []
            assert [t.task_id for t in dag.topological_sort()] == [
                "snapshot_offsets", "snapshot_topic", "reconcile", "validate", "alert", *pruned
            ]  # fmt: skip
            assert dag.get_task("snapshot_offsets").retries == 2
            assert dag.max_active_runs == 1


def test_a_pipeline_with_retention_days_prunes_after_its_alert_whatever_happened(dagbag) -> None:  # type: ignore[no-untyped-def]
    from recon_airflow.prune import PruneOperator

    for dag_id in sorted(PRUNED_DAGS):
        task = dagbag.get_dag(dag_id).get_task("prune")
        assert isinstance(task, PruneOperator)
        assert task.upstream_task_ids == {"alert"} and task.trigger_rule == "all_done"
        assert task.pipeline == dag_id.removeprefix("recon_")


PROBE = """
import json, sys
sys.path.insert(0, {plugins!r}); sys.path.insert(0, {dags!r})
import airflow.sdk  # Airflow itself is imported once per parser process, not per file
before = set(sys.modules)
for name in {modules!r}:
    __import__(name)
print(json.dumps({{"modules": sorted(set(sys.modules) - before)}}))
"""


def test_dag_files_parse_without_heavy_imports() -> None:
    # What keeps a parse fast is what it imports (Spark, Kafka, GX, the engines); its time is
    # the bench's to measure, not a test's: a bound in seconds fails on a busy machine.
    modules = [p.stem for p in DAGS.glob("*.py")]
    code = PROBE.format(plugins=str(ROOT / "plugins"), dags=str(DAGS), modules=modules)
    env = {**os.environ, "RECON_PIPELINES": str(ROOT / "demo" / "pipelines.yaml")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout
    probe = json.loads(out.strip().splitlines()[-1])
    loaded = [m for m in probe["modules"] if m.split(".")[0] in HEAVY or m in HEAVY]
    assert loaded == [], f"DAG files import heavy modules at top level: {loaded[:10]}"


def test_broken_yaml_is_an_import_error_naming_the_key(tmp_path: Path) -> None:
    bad = tmp_path / "pipelines.yaml"
    bad.write_text("pipelines:\n  p1:\n    semantics: twice\n")
    env = {**os.environ, "RECON_PIPELINES": str(bad)}
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'plugins')!r}); "
        f"sys.path.insert(0, {str(DAGS)!r}); import recon_pipelines"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert result.returncode != 0
    assert "pipeline 'p1'" in result.stderr and "semantics" in result.stderr


EXTRA = """
pipelines:
  extra:
    semantics: at_least_once
    schedule: null
    settle_seconds: 0
    kafka: {connection: kafka_default, topic: t, consumer_group: g, message_id: {key: true}}
    sink: {connection: postgres_sink, table: public.t, message_id_column: id}
"""


def _import_dir_dags(
    folder: Path, module: str = "recon_pipelines_dir"
) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "RECON_PIPELINES": str(ROOT / "demo" / "pipelines.yaml"),
        "RECON_PIPELINES_DIR": str(folder),
    }
    code = (
        f"import sys; sys.path.insert(0, {str(ROOT / 'plugins')!r}); "
        f"sys.path.insert(0, {str(DAGS)!r}); import {module} as m; "
        "d = m.recon_extra; print(d.dag_id, d.get_task('reconcile').pipelines_file)"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def test_a_pipelines_directory_adds_dags_that_run_with_their_own_file(tmp_path: Path) -> None:
    extra = tmp_path / "extra.yaml"
    extra.write_text(EXTRA)
    result = _import_dir_dags(tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["recon_extra", str(extra)]
    # A name the main file declares too would make two DAGs with one id: that file is refused,
    # naming both, as the import error of the folder's problems file; the others still run.
    (tmp_path / "clash.yaml").write_text(EXTRA.replace("extra:", "orders_at_most_once:"))
    assert _import_dir_dags(tmp_path).stdout.split() == ["recon_extra", str(extra)]
    result = _import_dir_dags(tmp_path, "recon_pipelines_dir_problems")
    assert result.returncode != 0
    assert "is also made by" in result.stderr and "demo/pipelines.yaml" in result.stderr


def test_a_pipeline_clashing_with_a_repair_dag_is_an_import_error(tmp_path: Path) -> None:
    # The reconciliation DAG of a pipeline named repair_extra is recon_repair_extra, the repair
    # DAG of pipeline extra too: refused by name, not one silently replacing the other.
    (tmp_path / "extra.yaml").write_text(EXTRA + EXTRA.split("pipelines:")[1].replace(
        "extra:", "repair_extra:"))  # fmt: skip
    result = _import_dir_dags(tmp_path, "recon_pipelines_dir_problems")
    assert result.returncode != 0
    assert "recon_repair_extra" in result.stderr and "made twice" in result.stderr


def test_a_local_engine_pipeline_runs_its_steps_without_spark_submit() -> None:
    from dataclasses import replace

    sys.path.insert(0, str(ROOT / "plugins"))
    from recon.config import parse_pipelines
    from recon_airflow.factory import build_dag
    from recon_airflow.operators import LocalStepOperator, ReconSparkSubmitOperator

    name, cfg = next(iter(parse_pipelines((ROOT / "demo" / "pipelines.yaml").read_text()).items()))
    dag = build_dag(replace(cfg, engine="local"))
    assert isinstance(dag.get_task("snapshot_topic"), LocalStepOperator)
    assert isinstance(dag.get_task("reconcile"), LocalStepOperator)
    # Great Expectations validates a local pipeline on pandas, in the task's process.
    validate = dag.get_task("validate")
    assert isinstance(validate, LocalStepOperator) and validate.step == "validate"
    assert validate.retries == 0
    spark_dag = build_dag(cfg)
    for task_id in ("snapshot_topic", "reconcile", "validate"):
        assert isinstance(spark_dag.get_task(task_id), ReconSparkSubmitOperator), (name, task_id)
    assert [t.task_id for t in dag.topological_sort()] == [
        t.task_id for t in spark_dag.topological_sort()
    ]
