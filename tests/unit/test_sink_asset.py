"""The sink as an Airflow Asset: its URI, the reconciliation DAG's alert task emitting it, and the
demo's downstream DAG scheduled on the same Asset."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from recon.config import load_pipelines
from recon_airflow.factory import build_dag
from recon_airflow.lineage import sink_asset, sink_asset_uri

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def test_sink_asset_uri_names_connection_schema_and_table() -> None:
    assert sink_asset_uri("postgres_sink", "app.orders") == "x-postgres://postgres_sink/app/orders"
    assert sink_asset_uri("pg", "orders") == "x-postgres://pg/public/orders"


def test_alert_task_emits_the_sink_asset_the_demo_report_waits_for(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    demo = ROOT / "demo" / "pipelines.yaml"
    monkeypatch.setenv("RECON_PIPELINES", str(demo))
    monkeypatch.setenv("RECON_PIPELINES_DIR", str(tmp_path))  # no folder pipelines
    cfg = load_pipelines(str(demo))["payments_exactly_once"]
    dag = build_dag(cfg, str(demo))
    assert dag.get_task("alert").outlets == [sink_asset(cfg)]
    assert all(not dag.get_task(t).outlets for t in dag.task_ids if t != "alert")
    made = runpy.run_path(str(ROOT / "dags" / "recon_verified_report.py"))
    report = made["verified_report_payments_exactly_once"]
    assert list(report.timetable.asset_condition.objects) == [sink_asset(cfg)]


def test_a_hops_target_topic_is_its_asset_and_its_lineage_sink(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fixtures.declarations import doc

    from recon.config import parse_pipelines
    from recon_airflow.lineage import step_lineage

    sink = {"kind": "kafka", "connection": "kafka_replica", "topic": "recon.payments",
            "message_id": {"header": "message_id"}}  # fmt: skip
    cfg = parse_pipelines(doc(sink=sink))["payments"]
    assert sink_asset(cfg).uri == "x-kafka://kafka_replica/recon.payments"
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_REPLICA", "kafka://replica.test:23192")
    monkeypatch.setenv("AIRFLOW_CONN_KAFKA_DEFAULT", "kafka://main.test:9092")
    monkeypatch.setenv("AIRFLOW_CONN_POSTGRES_RECON", "postgres://u:p@db.test:5432/recon")
    lineage = step_lineage(cfg, "reconcile", "postgres_recon")
    names = {(d.namespace, d.name) for d in lineage.inputs}
    assert ("kafka://replica.test:23192", "recon.payments") in names
