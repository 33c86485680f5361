"""Which runs the Spark engine's driver reads itself, their window (step 2) and their results
(the validation): ``RECON_SPARK_DRIVER_READ``, ``recon.engines.spark_snapshot.reads_on_driver``,
``window_on_driver`` (every window of a local Spark master, unless a bound is set); and
the Airflow task that then starts no Spark: no spark-submit, no Spark Connect session. That both
readers give the same verdicts is checked on the real stack
(tests/integration/test_engine_vs_workload.py, ``spark`` and ``spark-tasks``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from recon import settings
from recon.engines.plan import EngineSettings, PlannedRun
from recon.engines.spark_snapshot import reads_on_driver, window_on_driver
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


def _plan(record: RunRecord, data_dir: str) -> PlannedRun:
    """The run's plan with its files under ``data_dir``, the Spark engine's settings read now."""
    return PlannedRun(
        cfg=_PIPELINE, record=record, catalog=None, source_times=None,  # type: ignore[arg-type]
        data_dir=data_dir, engine=EngineSettings.read(spark=True), kafka=None,
    )  # fmt: skip


def test_the_bound_defaults_to_the_local_engines_read_on_a_thread(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    for unset in (None, ""):
        if unset is None:
            monkeypatch.delenv("RECON_SPARK_DRIVER_READ", raising=False)
        else:
            monkeypatch.setenv("RECON_SPARK_DRIVER_READ", unset)
        assert settings.spark_driver_read() is None
        assert reads_on_driver(_plan(_record(IN_PROCESS_OFFSETS), str(tmp_path)))
        assert not reads_on_driver(_plan(_record(IN_PROCESS_OFFSETS, 1), str(tmp_path)))
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
    assert reads_on_driver(_plan(_record(600, 400), here))
    assert not reads_on_driver(_plan(_record(600, 401), here))
    assert reads_on_driver(_plan(_record(600, 400), f"file://{here}"))
    # Parquet on storage the driver does not write to (a cluster's): always Spark's tasks.
    assert not reads_on_driver(_plan(_record(1), "s3a://bucket/recon"))
    monkeypatch.setenv("RECON_SPARK_DRIVER_READ", "0")
    assert not reads_on_driver(_plan(_record(1), here))


def test_a_local_master_reads_every_window_on_the_driver_unless_a_bound_is_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    here, large = str(tmp_path), _record(10_000_000, 1)
    monkeypatch.delenv("RECON_SPARK_DRIVER_READ", raising=False)
    for master in ("local[*]", "local[2]", " local"):
        monkeypatch.setenv("RECON_SPARK_MASTER", master)
        assert window_on_driver(_plan(large, here)) and window_on_driver(
            _plan(large, f"file://{here}")
        )
        # Its results are still validated by Spark: pandas would hold them all in memory.
        assert not reads_on_driver(_plan(large, here))
    # Files elsewhere than on the driver's disk, a cluster's master, or a bound set: Spark's
    # tasks read what the bound leaves them.
    assert not window_on_driver(_plan(large, "s3a://bucket/recon"))
    monkeypatch.setenv("RECON_SPARK_MASTER", "spark://127.0.0.1:23077")
    assert not window_on_driver(_plan(large, here))
    assert window_on_driver(_plan(_record(IN_PROCESS_OFFSETS), here))
    monkeypatch.setenv("RECON_SPARK_MASTER", "local[*]")
    monkeypatch.setenv("RECON_SPARK_DRIVER_READ", "1000")
    assert not window_on_driver(_plan(large, here)) and window_on_driver(_plan(_record(1000), here))
    monkeypatch.setenv("RECON_SPARK_DRIVER_READ", "0")
    assert not window_on_driver(_plan(_record(1), here))


_PIPELINE = SimpleNamespace(
    name="p1", engine="spark", kafka=SimpleNamespace(connection="kafka_default"),
    sink=SimpleNamespace(connection="postgres_sink"),
)  # fmt: skip


def test_reconcile_always_needs_spark_the_others_only_for_a_large_run(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    import recon.run.steps

    monkeypatch.setenv("RECON_SPARK_DRIVER_READ", "100")
    records = {"small": _record(100), "large": _record(101), "huge": _record(IN_PROCESS_OFFSETS, 1)}
    monkeypatch.setattr(
        recon.run.steps, "load_plan",
        lambda cfg, run_id, data_dir=None: _plan(records[run_id], data_dir or str(tmp_path)),
    )  # fmt: skip
    needs = {
        (run, step): recon.run.steps.step_needs_spark(_PIPELINE, run, step, data_dir=str(tmp_path))
        for run in ("small", "large")
        for step in ("snapshot_topic", "reconcile", "validate")
    }
    assert needs == {
        ("small", "snapshot_topic"): False, ("small", "reconcile"): True,
        ("small", "validate"): False, ("large", "snapshot_topic"): True,
        ("large", "reconcile"): True, ("large", "validate"): True,
    }  # fmt: skip
    local = SimpleNamespace(**{**vars(_PIPELINE), "engine": "local"})
    assert not recon.run.steps.step_needs_spark(local, "large", "reconcile")
    # Without a bound, a local master's driver reads a window of any size.
    monkeypatch.delenv("RECON_SPARK_DRIVER_READ")
    monkeypatch.setenv("RECON_SPARK_MASTER", "local[*]")
    huge = {
        step: recon.run.steps.step_needs_spark(_PIPELINE, "huge", step, data_dir=str(tmp_path))
        for step in ("snapshot_topic", "reconcile", "validate")
    }
    assert huge == {"snapshot_topic": False, "reconcile": True, "validate": True}


@pytest.mark.parametrize("remote", ["", "sc://localhost:23999"])
@pytest.mark.parametrize("step", ["snapshot_topic", "validate"])
def test_a_step_the_driver_does_runs_in_the_task_without_spark(
    monkeypatch: pytest.MonkeyPatch, remote: str, step: str
) -> None:
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    import recon.run.steps
    import recon.spark
    import recon_airflow.hooks
    import recon_airflow.operators as operators

    monkeypatch.setenv("RECON_SPARK_REMOTE", remote)
    monkeypatch.setattr(recon_airflow.hooks, "use_airflow_connections", lambda: None)
    monkeypatch.setattr(operators, "_load", lambda *_: _PIPELINE)
    monkeypatch.setattr(recon_airflow.hooks, "connections_env", lambda ids: {})
    needs: list[bool] = []
    asked: list[str] = []

    def step_needs_spark(cfg: Any, run_id: str, name: str) -> bool:
        asked.append(name)
        return needs[0]

    monkeypatch.setattr(recon.run.steps, "step_needs_spark", step_needs_spark)
    steps: list[Any] = []
    monkeypatch.setattr(operators, "_step_in_process", lambda op, ctx, spark: steps.append(spark))

    def no_spark(*_: Any, **__: Any) -> None:
        raise AssertionError("a Spark was started")

    monkeypatch.setattr(recon.spark, "remote_session", no_spark)
    monkeypatch.setattr(SparkSubmitOperator, "execute", no_spark)
    op = operators.ReconSparkSubmitOperator(task_id="t", pipeline="p1", step=step)
    needs.append(False)
    op.execute({"run_id": RUN_ID})
    assert steps == [None] and asked == [step]
    # A run Spark reads: the task starts its Spark as before.
    needs[0] = True
    with pytest.raises(AssertionError, match="a Spark was started"):
        op.execute({"run_id": RUN_ID})
