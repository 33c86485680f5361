"""The reconciliation DAG's last task for a pipeline that declares ``retention_days``: remove its
runs that ended longer ago, and every file no run left in place needs (``recon.prune``, as
``recon prune --before <retention_days>d`` does by hand).

It runs whatever happened upstream (a broken contract fails the alert task, and old runs still
go), never removes the run that made the pipeline's current state, and stops without removing
anything when another run of the pipeline starts or commits meanwhile (the next DAG run prunes).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from recon.errors import ReconError
from recon_airflow.operators import _check_name, _load

log = logging.getLogger(__name__)


class PruneOperator(BaseOperator):
    """Remove the pipeline's runs older than its ``retention_days``, and unneeded files.

    :param pipeline: the pipeline's name in the YAML.
    :param pipelines_file: the YAML (default: ``$RECON_PIPELINES``).
    :param data_dir: where the pipeline's runs write (default: ``recon.settings.data_dir``).
    """

    template_fields: Sequence[str] = ("pipeline",)
    ui_color = "#eef2f7"

    def __init__(
        self,
        *,
        pipeline: str,
        pipelines_file: str | None = None,
        data_dir: str | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("trigger_rule", "all_done")
        super().__init__(**kwargs)
        _check_name(pipeline)
        self.pipeline = pipeline
        self.pipelines_file = pipelines_file
        self.data_dir = data_dir

    def execute(self, context: Any) -> dict[str, Any]:
        from recon.prune import prune_pipeline, retention_start
        from recon.store.prune import PruneRaced
        from recon_airflow.hooks import use_airflow_connections

        use_airflow_connections()
        cfg = _load(self.pipeline, self.pipelines_file)
        before = retention_start(cfg)
        if before is None:  # the declaration changed since the DAG was parsed
            raise AirflowSkipException(f"pipeline '{cfg.name}' declares no retention_days")
        try:
            plan = prune_pipeline(cfg, before, self.data_dir, progress=log.info)
        except PruneRaced as exc:  # nothing removed; the next DAG run prunes
            raise AirflowSkipException(str(exc)) from None
        except ReconError as exc:
            raise AirflowFailException(str(exc)) from None
        for run_id, reason in plan.kept.items():
            log.info("pipeline %s: kept run %s (%s)", cfg.name, run_id, reason)
        # The summary, not the lists: XCom is no place for thousands of paths.
        return {"before": before.isoformat(), "runs_removed": len(plan.runs),
                "files_removed": len(plan.files), "bytes_removed": plan.bytes,
                "kept": len(plan.kept)}  # fmt: skip
