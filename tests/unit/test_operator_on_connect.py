"""An Airflow Spark step attached to a Spark Connect server (``RECON_SPARK_REMOTE``) whose server
is not there, or goes away mid-step: the task fails for a retry in one line naming the server,
the step and the run, not with the client's gRPC traceback; any other error stays as it was."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures.alerts import free_port

pytestmark = pytest.mark.unit

RUN_ID = "scheduled__2026-01-01T00:00:00+00:00"


class _Session:
    def __init__(self) -> None:
        self.stopped = False

    def stop(self) -> None:
        self.stopped = True


def _operator() -> Any:
    from recon_airflow.operators import ReconSparkSubmitOperator

    return ReconSparkSubmitOperator(task_id="reconcile", pipeline="p1", step="reconcile")


def _server_gone() -> Exception:
    import grpc
    from pyspark.errors.exceptions.connect import SparkConnectGrpcException

    return SparkConnectGrpcException(
        "failed to connect", grpc_status_code=grpc.StatusCode.UNAVAILABLE
    )


@pytest.fixture
def attached(monkeypatch: pytest.MonkeyPatch) -> tuple[_Session, list[Exception]]:
    """The operator's step attached to a (fake) session; ``raised`` holds what the step raises."""
    import recon.spark
    import recon_airflow.operators as operators

    session, raised = _Session(), []
    monkeypatch.setenv("RECON_SPARK_REMOTE", "sc://localhost:23999")
    monkeypatch.setattr(recon.spark, "remote_session", lambda *_: session)

    def step(*_: Any) -> None:
        raise raised[0]

    monkeypatch.setattr(operators, "_step_in_process", step)
    return session, raised


def _one_line(exc: BaseException) -> str:
    assert exc.__cause__ is None and exc.__suppress_context__, "the task log shows a traceback"
    assert "\n" not in str(exc)
    return str(exc)


def test_a_server_lost_mid_step_fails_the_task_for_a_retry_in_one_line(
    attached: tuple[_Session, list[Exception]],
) -> None:
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    session, raised = attached
    raised.append(_server_gone())
    with pytest.raises(AirflowException) as failed:
        _operator().execute({"run_id": RUN_ID})
    assert not isinstance(failed.value, AirflowFailException), "a lost server is worth a retry"
    text = _one_line(failed.value)
    assert "Spark Connect server at sc://localhost:23999 went away" in text
    assert f"step 'reconcile' of run '{RUN_ID}'" in text and "pipeline 'p1'" in text
    # Stopping a session of a server that is gone would only retry its goodbye.
    assert not session.stopped


def test_any_other_error_of_the_step_is_left_as_it_was(
    attached: tuple[_Session, list[Exception]],
) -> None:
    session, raised = attached
    raised.append(ZeroDivisionError("a bug"))
    with pytest.raises(ZeroDivisionError):
        _operator().execute({"run_id": RUN_ID})
    assert session.stopped


def test_a_server_that_is_not_there_fails_the_task_for_a_retry_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    port = free_port()  # a loopback port nothing listens on
    monkeypatch.setenv("RECON_SPARK_REMOTE", f"sc://localhost:{port}")
    with pytest.raises(AirflowException) as failed:
        _operator().execute({"run_id": RUN_ID})
    assert not isinstance(failed.value, AirflowFailException)
    assert f"no Spark Connect server answers at sc://localhost:{port}" in _one_line(failed.value)
