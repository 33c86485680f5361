"""One source of Spark settings: the CLI's session and Airflow's spark-submit run the same ones,
so a DAG run opens no Spark UI and keeps credentials out of Spark's plans and event log."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.unit


def test_spark_submit_runs_with_the_cli_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from recon.spark import spark_settings
    from recon_airflow.operators import ReconSparkSubmitOperator

    monkeypatch.delenv("RECON_SPARK_UI", raising=False)
    task = ReconSparkSubmitOperator(task_id="reconcile", pipeline="p1", step="reconcile")
    assert task.conf == spark_settings()


def test_no_ui_loopback_only_and_credentials_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    from recon.spark import spark_settings

    monkeypatch.delenv("RECON_SPARK_UI", raising=False)
    settings = spark_settings()
    assert settings["spark.ui.enabled"] == "false"
    assert settings["spark.driver.bindAddress"] == settings["spark.driver.host"] == "127.0.0.1"
    redacted = settings["spark.redaction.regex"]
    for key in ("sasl.jaas.config", "ssl.keystore.password", "kafka.ssl.key.password"):
        assert __import__("re").search(redacted, key), key
