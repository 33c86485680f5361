"""Which windows the Spark engine's step 2 reads on the driver (``RECON_SPARK_DRIVER_READ``,
``recon.engines.spark_run.reads_on_driver``), and the Airflow task that then starts no Spark:
no spark-submit, no Spark Connect session. That both readers give the same verdicts is checked
on the real stack (tests/integration/test_engine_vs_workload.py, ``spark`` and ``spark-tasks``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from recon import settings
from recon.engines.spark_run import reads_on_driver
from recon.errors import ConfigError
from recon.read.kafka_local.pool import IN_PROCESS_OFFSETS
from recon.snapshot.window import PartitionWindow
from recon.store import RunRecord

pytestmark = pytest.mark.unit

RUN_ID = "manual__2026-11-29T00:00:00+00:00"


def _record(*sizes: int) -> RunRecord:
    """A run whose window holds ``sizes[i]`` committed offsets in partition ``i``."""
    windows = [
        PartitionWindow(
            topic="t", partition=p, log_start_offset=0, last_stable_offset=n, high_watermark=n,
            committed_offset=n, settled_offset=n, window_from=0, window_to=n,
            previous_committed=0, rewound=False, new_partition=False,
        )
        for p, n in enumerate(sizes)
    ]  # fmt: skip
    return RunRecord(
        pipeline="p1", run_id=RUN_ID, status="snapshot", snapshot_at=datetime.now(UTC),
        windows=windows, base_run_id=None, base_ledger_path=None, sink_seq_from=None,
        sink_seq_to=None,
    )  # fmt: skip


def test_the_bound_defaults_to_the_local_engines_read_on_a_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("RECON_SPARK_DRIVER_READ", raising=False)
    assert settings.spark_driver_read() == IN_PROCESS_OFFSETS
    monkeypatch.setenv("RECON_SPARK_DRIVER_READ", "")
    assert settings.spark_driver_read() == IN_PROCESS_OFFSETS
    monkeypatch.setenv("RECON_SPARK_DRIVER_READ", "0")
    assert settings.spark_driver_read() == 0


@pytest.mark.parametrize("value", ["lots", "-5", "1e6"])
def test_a_bound_that_is_no_count_is_named_with_the_variable(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("RECON_SPARK_DRIVER_READ", value)
    with pytest.raises(ConfigError) as bad:
        settings.spark_driver_read()
    assert "RECON_SPARK_DRIVER_READ" in str(bad.value) and repr(value) in str(bad.value)


def test_a_window_up_to_the_bound_is_read_on_the_driver_and_one_past_it_by_spark(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setenv("RECON_SPARK_DRIVER_READ", "1000")
    here = str(tmp_path)
    assert reads_on_driver(_record(600, 400), here)
    assert not reads_on_driver(_record(600, 401), here)
    assert reads_on_driver(_record(600, 400), f"file://{here}")
    # Parquet on storage the driver does not write to (a cluster's): always Spark's tasks.
    assert not reads_on_driver(_record(1), "s3a://bucket/recon")
    monkeypatch.setenv("RECON_SPARK_DRIVER_READ", "0")
    assert not reads_on_driver(_record(1), here)


_PIPELINE = SimpleNamespace(
    name="p1", kafka=SimpleNamespace(connection="kafka_default"),
    sink=SimpleNamespace(connection="postgres_sink"),
)  # fmt: skip


@pytest.mark.parametrize("remote", ["", "sc://localhost:23999"])
def test_a_snapshot_the_driver_reads_runs_in_the_task_without_spark(
    monkeypatch: pytest.MonkeyPatch, remote: str
) -> None:
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    import recon.engine
    import recon.spark
    import recon_airflow.hooks
    import recon_airflow.operators as operators

    monkeypatch.setenv("RECON_SPARK_REMOTE", remote)
    monkeypatch.setattr(recon_airflow.hooks, "use_airflow_connections", lambda: None)
    monkeypatch.setattr(operators, "_load", lambda *_: _PIPELINE)
    monkeypatch.setattr(recon_airflow.hooks, "connections_env", lambda ids: {})
    needs: list[bool] = []
    monkeypatch.setattr(recon.engine, "snapshot_needs_spark", lambda cfg, run_id: needs[0])
    steps: list[Any] = []
    monkeypatch.setattr(operators, "_step_in_process", lambda op, ctx, spark: steps.append(spark))

    def no_spark(*_: Any, **__: Any) -> None:
        raise AssertionError("a Spark was started")

    monkeypatch.setattr(recon.spark, "remote_session", no_spark)
    monkeypatch.setattr(SparkSubmitOperator, "execute", no_spark)
    op = operators.ReconSparkSubmitOperator(task_id="t", pipeline="p1", step="snapshot_topic")
    needs.append(False)
    op.execute({"run_id": RUN_ID})
    assert steps == [None]
    # A window Spark reads: the task starts its Spark as before.
    needs[0] = True
    with pytest.raises(AssertionError, match="a Spark was started"):
        op.execute({"run_id": RUN_ID})
