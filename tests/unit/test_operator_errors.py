"""The snapshot task fails for good on a user mistake and leaves a service outage to Airflow's
retries: a broker that is down now may be back for the task's next try."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.unit


def _execute(monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    import recon.stack.preflight
    import recon_airflow.hooks
    from recon_airflow import operators

    def fail(*_: Any, **__: Any) -> None:
        raise error

    monkeypatch.setattr(recon_airflow.hooks, "use_airflow_connections", lambda: None)
    monkeypatch.setattr(operators, "_load", lambda *_: object())
    monkeypatch.setattr(recon.stack.preflight, "check_pipeline", fail)
    task = operators.SnapshotOffsetsOperator(task_id="snapshot_offsets", pipeline="p1")
    task.execute({"run_id": "r1"})


def test_a_broker_that_is_down_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    from recon.snapshot.offsets import KafkaUnreachable

    with pytest.raises(AirflowException, match="pipeline 'p1'") as raised:
        _execute(monkeypatch, KafkaUnreachable("pipeline 'p1': no broker answered"))
    assert not isinstance(raised.value, AirflowFailException)


@pytest.mark.parametrize(
    "error",
    [
        "recon.errors.ConfigError",
        "recon.errors.ConnectionNotFound",
        "recon.snapshot.offsets.KafkaAuthFailed",
    ],
)
def test_a_user_mistake_fails_without_retries(monkeypatch: pytest.MonkeyPatch, error: str) -> None:
    import importlib

    from airflow.sdk.exceptions import AirflowFailException

    module, name = error.rsplit(".", 1)
    cls = getattr(importlib.import_module(module), name)
    with pytest.raises(AirflowFailException, match="pipeline 'p1'"):
        _execute(monkeypatch, cls("pipeline 'p1': kafka.topic: wrong"))


def test_service_failures_are_one_family() -> None:
    from recon.errors import ServiceUnavailable, SparkDriverLost
    from recon.snapshot.offsets import KafkaAuthFailed, KafkaUnreachable
    from recon.store import CommitInterrupted, ConcurrentRunError

    for cls in (KafkaUnreachable, CommitInterrupted, SparkDriverLost):
        assert issubclass(cls, ServiceUnavailable), cls
    for cls in (KafkaAuthFailed, ConcurrentRunError):
        assert not issubclass(cls, ServiceUnavailable), cls


def test_the_alert_task_names_a_missing_snapshot_not_a_stack_trace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The alert task runs whatever happened upstream; when the snapshot failed there is no run,
    and its message must point there."""
    import types

    from airflow.sdk.exceptions import AirflowFailException

    import recon.alert.for_run
    import recon_airflow.hooks
    from recon.store import RunNotFound
    from recon_airflow import operators

    def no_run(cfg: Any, run_id: str, **_: Any) -> None:
        raise RunNotFound(f"pipeline '{cfg.name}': no run '{run_id}'")

    monkeypatch.setattr(recon_airflow.hooks, "use_airflow_connections", lambda: None)
    monkeypatch.setattr(operators, "_load", lambda *_: types.SimpleNamespace(name="p1"))
    monkeypatch.setattr(recon.alert.for_run, "alert_for_run", no_run)
    task = operators.AlertOperator(task_id="alert", pipeline="p1")
    context = {"run_id": "r1", "dag": types.SimpleNamespace(dag_id="recon_p1")}
    with pytest.raises(AirflowFailException, match="snapshot_offsets failed or did not run"):
        task.execute(context)
