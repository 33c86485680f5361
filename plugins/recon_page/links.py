"""Where the page's links go: this app's own views, Airflow's DAG and run pages, Data Docs
(every part of the page that links takes one :class:`Links`)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from recon_page.auth import dag_id, repair_dag_id
from recon_page.data import Run
from recon_page.docs import docs_href


@dataclass(frozen=True)
class Links:
    """Where things are: ``prefix`` is this app's mount path, ``airflow`` the UI's root path."""

    prefix: str
    airflow: str

    def page(self, pipeline: str | None = None) -> str:
        return f"{self.prefix}/" + (f"?pipeline={quote(pipeline, safe='')}" if pipeline else "")

    def discrepancies(self, pipeline: str, run_id: str, verdict: str | None = None) -> str:
        """The pipeline's page at one run's discrepancies (of one verdict)."""
        from recon_page.browse import Filter

        query = Filter(run_id=run_id, verdict=verdict).query(pipeline)
        return f"{self.prefix}/?{query}#discrepancies"

    def dag(self, pipeline: str) -> str:
        return f"{self.airflow}/dags/{quote(dag_id(pipeline), safe='')}"

    def dag_run(self, pipeline: str, run_id: str) -> str:
        return f"{self.dag(pipeline)}/runs/{quote(run_id, safe='')}"

    def runs_api(self, pipeline: str) -> str:
        return f"{self.prefix}/api/runs?pipeline={quote(pipeline, safe='')}"

    def docs(self, run: Run) -> str | None:
        return docs_href(run.validation_url, self.prefix)

    def repair(self, plan_id: str) -> str:
        """The read-only view of one repair plan."""
        return f"{self.prefix}/repairs/{quote(plan_id, safe='')}"

    def repair_dag(self, pipeline: str) -> str:
        return f"{self.airflow}/dags/{quote(repair_dag_id(pipeline), safe='')}"

    def airflow_run(self, dag: str, run_id: str) -> str:
        return f"{self.airflow}/dags/{quote(dag, safe='')}/runs/{quote(run_id, safe='')}"
