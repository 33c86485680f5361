"""The repair DAG's task (``recon_airflow.repair.ApplyRepairOperator``) with the domain calls
faked: it finds the plan in ``recon.repairs``, applies it as ``airflow:<dag_id>/<run_id>`` (and
the user who triggered it), and
turns an unknown, foreign or refused plan into one line that names the pipeline and the plan."""

from __future__ import annotations

import contextlib
import types
from collections.abc import Iterator
from typing import Any

import pytest
from fixtures.repair_plans import sample_plan_dict

pytestmark = pytest.mark.unit

DAG_ID = "recon_repair_payments"
CONTEXT = {
    "run_id": "manual__2026-11-20T08:06", "dag": types.SimpleNamespace(dag_id=DAG_ID),
    "dag_run": types.SimpleNamespace(triggering_user_name="ops"),
}  # fmt: skip
WHO = f"airflow:{DAG_ID}/manual__2026-11-20T08:06 (triggered by ops)"


@pytest.fixture
def stored(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """``recon.repairs`` as a dict of plan id -> row; the pipeline ``payments``; no services."""
    import recon.run.services
    import recon.store
    import recon.store.repairs
    import recon_airflow.hooks
    from recon_airflow import repair

    rows: dict[str, Any] = {}

    @contextlib.contextmanager
    def no_db() -> Iterator[object]:
        yield object()

    monkeypatch.setattr(recon_airflow.hooks, "use_airflow_connections", lambda: None)
    monkeypatch.setattr(repair, "_load", lambda p, f: types.SimpleNamespace(name=p))
    monkeypatch.setattr(recon.run.services, "results_db", no_db)
    monkeypatch.setattr(recon.store, "ensure_schema", lambda pg: None)
    monkeypatch.setattr(recon.store.repairs, "find_repair", lambda pg, plan_id: rows.get(plan_id))
    return rows


def _row(plan: dict[str, Any]) -> Any:
    return types.SimpleNamespace(plan_id=plan["plan_id"], pipeline=plan["pipeline"], plan=plan)


def _task(plan_id: str = "{{ params.plan_id }}") -> Any:
    from recon_airflow.repair import ApplyRepairOperator

    return ApplyRepairOperator(task_id="apply_plan", pipeline="payments", plan_id=plan_id)


def _fake_apply(monkeypatch: pytest.MonkeyPatch, fail: Exception | None = None) -> list[Any]:
    import recon.repair.applier
    from recon.repair.applier import ApplyResult

    calls: list[Any] = []

    def apply(plan: Any, cfg: Any, *, dry_run: bool = False, say: Any = print,
              by: str | None = None) -> ApplyResult:  # fmt: skip
        calls.append((plan, cfg, dry_run, by))
        say("sink: 1 row deleted")
        if fail is not None:
            raise fail
        return ApplyResult(plan.plan_id, "applied", deleted=1, replayed=1)

    monkeypatch.setattr(recon.repair.applier, "apply_plan", apply)
    return calls


def test_an_unknown_plan_id_fails_naming_the_pipeline_and_the_plan(
    monkeypatch: pytest.MonkeyPatch, stored: dict[str, Any]
) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    calls = _fake_apply(monkeypatch)
    with pytest.raises(AirflowFailException) as raised:
        _task("0123456789abcdef").execute(CONTEXT)
    message = str(raised.value)
    assert "pipeline 'payments'" in message and "'0123456789abcdef'" in message
    assert "recon repair plan --pipeline payments" in message and "\n" not in message
    assert calls == []


def test_a_plan_of_another_pipeline_is_refused(
    monkeypatch: pytest.MonkeyPatch, stored: dict[str, Any]
) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    plan = sample_plan_dict("orders")
    stored[plan["plan_id"]] = _row(plan)
    calls = _fake_apply(monkeypatch)
    with pytest.raises(AirflowFailException, match="pipeline 'payments'") as raised:
        _task(plan["plan_id"]).execute(CONTEXT)
    assert plan["plan_id"] in str(raised.value) and "pipeline 'orders'" in str(raised.value)
    assert calls == []


def test_a_plan_is_applied_as_the_dag_run(
    monkeypatch: pytest.MonkeyPatch, stored: dict[str, Any]
) -> None:
    plan = sample_plan_dict()
    stored[plan["plan_id"]] = _row(plan)
    calls = _fake_apply(monkeypatch)
    task = _task(plan["plan_id"])
    said: list[str] = []
    monkeypatch.setattr(task.log, "info", lambda msg, *a: said.append(msg % a if a else msg))
    result = task.execute(CONTEXT)
    ((applied, cfg, dry_run, who),) = calls
    assert applied.plan_id == plan["plan_id"] and cfg.name == "payments" and not dry_run
    assert who == WHO
    assert "sink: 1 row deleted" in said  # the applier speaks into the task's log
    assert result["status"] == "applied" and result["applied_by"] == WHO
    assert (result["deleted"], result["replayed"]) == (1, 1)


def test_a_refused_plan_fails_for_good_and_an_outage_is_retried(
    monkeypatch: pytest.MonkeyPatch, stored: dict[str, Any]
) -> None:
    from airflow.sdk.exceptions import AirflowException, AirflowFailException

    from recon.repair.replay import ReplayFailed
    from recon.repair.sink_rows import RepairStale

    plan = sample_plan_dict()
    stored[plan["plan_id"]] = _row(plan)
    _fake_apply(monkeypatch, RepairStale("pipeline 'payments': the sink changed\nsince the plan"))
    with pytest.raises(AirflowFailException, match="the sink changed since the plan"):
        _task(plan["plan_id"]).execute(CONTEXT)
    _fake_apply(monkeypatch, ReplayFailed("pipeline 'payments': no broker answered"))
    with pytest.raises(AirflowException, match="no broker answered") as raised:
        _task(plan["plan_id"]).execute(CONTEXT)
    assert not isinstance(raised.value, AirflowFailException)


def test_the_task_never_applies_above_the_bound(
    monkeypatch: pytest.MonkeyPatch, stored: dict[str, Any]
) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    import recon.repair.applier
    from recon.repair.trust import OverBound

    plan = sample_plan_dict()
    stored[plan["plan_id"]] = _row(plan)
    asked: list[bool] = []

    def apply(plan: Any, cfg: Any, *, allow_over_bound: bool = False, **_: Any) -> Any:
        asked.append(allow_over_bound)
        raise OverBound(f"pipeline 'payments': plan {plan.plan_id} deletes 5 of 10 rows, above "
                        "the bound (repair.max_delete_ratio is 0.1): a person may apply it "
                        "with --allow-over-bound")  # fmt: skip

    monkeypatch.setattr(recon.repair.applier, "apply_plan", apply)
    with pytest.raises(AirflowFailException, match="repair.max_delete_ratio") as raised:
        _task(plan["plan_id"]).execute(CONTEXT)
    assert "--allow-over-bound" in str(raised.value)
    assert asked == [False], "the DAG's task asked to go over the bound"


def test_a_stored_plan_edited_by_hand_is_refused(
    monkeypatch: pytest.MonkeyPatch, stored: dict[str, Any]
) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    plan = {**sample_plan_dict(), "topic": "edited"}
    stored[plan["plan_id"]] = _row(plan)
    calls = _fake_apply(monkeypatch)
    with pytest.raises(AirflowFailException, match="does not match its id"):
        _task(plan["plan_id"]).execute(CONTEXT)
    assert calls == []


def test_an_empty_plan_id_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    from recon_airflow.repair import ApplyRepairOperator

    with pytest.raises(ValueError, match="plan_id"):
        ApplyRepairOperator(task_id="apply_plan", pipeline="payments", plan_id="")
    with pytest.raises(ValueError, match="pipeline"):
        ApplyRepairOperator(task_id="apply_plan", pipeline="", plan_id="p")
    task = _task()
    task.plan_id = "  "  # what an empty param renders to
    with pytest.raises(AirflowFailException, match="pipeline 'payments': no plan id"):
        task.execute(CONTEXT)
