"""One reconciliation DAG per pipeline declared in the YAML ($RECON_PIPELINES).

Only wiring: the YAML is parsed (small, offline); connections, Spark, Kafka and Great Expectations
are touched by the tasks at run time, never here.
"""

from __future__ import annotations

from recon.config import default_pipelines_path, load_pipelines
from recon_airflow.factory import build_dag

_PIPELINES_FILE = default_pipelines_path()

for _cfg in load_pipelines(_PIPELINES_FILE).values():
    _dag = build_dag(_cfg, _PIPELINES_FILE)
    globals()[_dag.dag_id] = _dag
