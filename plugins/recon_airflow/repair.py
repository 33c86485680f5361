"""The repair DAG's one task (``recon_repair_<pipeline>``): apply a plan kept in
``recon.repairs`` (``recon repair plan`` made it) with ``recon.repair.applier.apply_plan``, as
``recon repair apply`` does, under Airflow's audit trail: ``recon.repairs`` records the plan as
applied by ``airflow:<dag_id>/<run_id>`` and the user who triggered the run.

Like the other operators, it validates its arguments at construction, resolves the pipeline and
its connections when it runs, and turns every failure into one line: a refused or unknown plan
fails without retries; a broker or database that is down is left to Airflow's retries (applying
again finishes what a first apply started).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from recon.errors import ReconError
from recon_airflow.operators import _check_name, _load


def applied_by(dag_id: str, run_id: str, user: str | None = None) -> str:
    """Who applies, as ``recon.repairs`` records it: the DAG run, and who triggered it."""
    return f"airflow:{dag_id}/{run_id}" + (f" (triggered by {user})" if user else "")


class PlanNotFound(ReconError):
    """No plan of this id for this pipeline in ``recon.repairs`` (a user mistake)."""


def load_plan(pipeline: str, plan_id: str) -> Any:
    """The plan ``plan_id`` of ``pipeline`` as ``recon.repairs`` keeps it.

    :raises PlanNotFound: no such plan, or a plan of another pipeline.
    :raises recon.repair.plan_model.RepairPlanInvalid: the stored plan no longer matches its id.
    """
    from recon.repair.plan_model import plan_from_dict
    from recon.run.services import results_db
    from recon.store import ensure_schema
    from recon.store.repairs import find_repair

    with results_db() as pg:
        ensure_schema(pg)
        row = find_repair(pg, plan_id)
    if row is None:
        raise PlanNotFound(
            f"pipeline '{pipeline}': no repair plan '{plan_id}' in recon.repairs: make one with "
            f"`recon repair plan --pipeline {pipeline}`, list them with `recon repair list "
            f"--pipeline {pipeline}`"
        )
    if row.pipeline != pipeline:
        raise PlanNotFound(
            f"pipeline '{pipeline}': plan '{plan_id}' is a plan of pipeline '{row.pipeline}', "
            f"not of this one: trigger the repair DAG of '{row.pipeline}' with it"
        )
    return plan_from_dict(row.plan, f"pipeline '{pipeline}': plan '{plan_id}' in recon.repairs")


class ApplyRepairOperator(BaseOperator):
    """Apply one repair plan of a pipeline: its sink deletes in one transaction, then its
    replays; ``recon.repairs`` records it as applied by this DAG run. A plan already applied
    (or judged) changes nothing and succeeds. A plan deleting more than the pipeline's bound
    (``repair.max_deletes``, ``repair.max_delete_ratio``) fails for good: only a person applies
    one (``recon repair apply --allow-over-bound``), never this task.

    :param pipeline: the pipeline's name in the YAML.
    :param plan_id: the plan's id in ``recon.repairs`` (templated: the DAG passes
        ``{{ params.plan_id }}``).
    :param pipelines_file: the YAML (default: ``$RECON_PIPELINES``).
    """

    template_fields: Sequence[str] = ("pipeline", "plan_id")
    ui_color = "#fff4e5"

    def __init__(
        self, *, pipeline: str, plan_id: str, pipelines_file: str | None = None, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        _check_name(pipeline)
        if not plan_id or not isinstance(plan_id, str):
            raise ValueError("plan_id must be a non-empty string (or a template giving one)")
        self.pipeline = pipeline
        self.plan_id = plan_id
        self.pipelines_file = pipelines_file

    def execute(self, context: Any) -> dict[str, Any]:
        from psycopg2 import OperationalError

        from recon.errors import ServiceUnavailable
        from recon.repair.applier import apply_plan
        from recon_airflow.hooks import use_airflow_connections

        plan_id = str(self.plan_id or "").strip()
        if not plan_id:
            raise AirflowFailException(
                f"pipeline '{self.pipeline}': no plan id: trigger the DAG with the param plan_id"
            )
        dag_run = context.get("dag_run")
        user = getattr(dag_run, "triggering_user_name", None) if dag_run is not None else None
        who = applied_by(context["dag"].dag_id, context["run_id"], user)
        use_airflow_connections()
        try:
            cfg = _load(self.pipeline, self.pipelines_file)
            plan = load_plan(cfg.name, plan_id)
            self.log.info("applying plan %s of pipeline %s as %s", plan_id, cfg.name, who)
            result = apply_plan(plan, cfg, say=self.log.info, by=who)
        except (ServiceUnavailable, OperationalError) as exc:
            # A broker or database down now may be back for the next try, which finishes the plan.
            raise AirflowException(_line(exc)) from None
        except ReconError as exc:
            # Unknown, refused or stale plan, or a config mistake: trying again changes nothing.
            raise AirflowFailException(_line(exc)) from None
        self.log.info(
            "plan %s: %s: %d sink rows deleted, %d records replayed (%d by an earlier apply), "
            "%d not replayable",
            plan_id, result.status, result.deleted, result.replayed, result.already_replayed,
            len(result.not_replayable),
        )  # fmt: skip
        return {
            "pipeline": cfg.name,
            "plan_id": result.plan_id,
            "status": result.status,
            "applied_by": who,
            "deleted": result.deleted,
            "replayed": result.replayed,
            "already_replayed": result.already_replayed,
            "not_replayable": len(result.not_replayable),
        }


def _line(exc: BaseException) -> str:
    """An error as one line (a driver's message can span several)."""
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
