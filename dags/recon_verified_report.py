"""A downstream DAG that waits for verified data: ``verified_report_<pipeline>``, scheduled on the
Airflow Asset of a pipeline's sink (``recon_airflow.lineage.sink_asset``).

The reconciliation DAG's ``alert`` task emits that Asset only after a run that kept its contract,
its event's ``extra`` holding the verified extent (``recon.store.verified``): per partition the
offsets below which every record has a final verdict, and the event-time watermark. A failed run
emits nothing, so this DAG does not run after it.

Made for the demo's ``payments_exactly_once`` (``$RECON_PIPELINES``) and for each pipeline of
``$RECON_PIPELINES_DIR`` tagged ``verified-report``. Only wiring: the YAML is parsed, nothing is
connected to here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from airflow.sdk import DAG, task

from recon.config import default_pipelines_path, load_pipelines
from recon.errors import ConfigError
from recon_airflow.folder import plan_folder
from recon_airflow.lineage import sink_asset

DEMO_PIPELINE = "payments_exactly_once"
TAG = "verified-report"
DAG_PREFIX = "verified_report_"


def _report_dag(cfg: Any) -> DAG:
    asset = sink_asset(cfg)
    with DAG(
        dag_id=f"{DAG_PREFIX}{cfg.name}",
        schedule=[asset],
        start_date=datetime(2026, 1, 1),
        catchup=False,
        default_args={"retries": 1, "owner": "recon"},
        tags=["recon", "downstream"],
        description=f"Runs when {cfg.sink.table} is verified up to a new watermark",
        doc_md=__doc__,
    ) as dag:

        @task(multiple_outputs=False)
        def print_watermark(**context: Any) -> dict[str, Any]:
            """Prints the watermark of each event that triggered the run; returns the newest."""
            newest: dict[str, Any] = {}
            for event in context["triggering_asset_events"][asset]:
                extra = dict(event.extra or {})
                print(
                    f"verified: {extra.get('pipeline')} run {extra.get('run_id')}: every record "
                    f"stamped at or before {extra.get('watermark')} is accounted for; offsets "
                    + ", ".join(
                        f"{p['topic']}[{p['partition']}] < {p['verified_to']}"
                        for p in extra.get("partitions", [])
                    )
                )
                newest = extra
            return newest

        print_watermark()
    return dag


def _pipelines() -> list[Any]:
    try:
        main = load_pipelines(default_pipelines_path())
    except ConfigError:
        main = {}  # the main DAG file reports the problem
    picked = [cfg for name, cfg in main.items() if name == DEMO_PIPELINE]
    picked += [cfg for _, cfg in plan_folder().accepted if TAG in cfg.tags]
    return picked


for _cfg in _pipelines():
    globals()[f"{DAG_PREFIX}{_cfg.name}"] = _report_dag(_cfg)
