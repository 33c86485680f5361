"""Two DAGs per pipeline declared in the YAML ($RECON_PIPELINES): its reconciliation DAG,
``recon_<pipeline>``, and its repair DAG, ``recon_repair_<pipeline>`` (manual, applies a plan).

Only wiring: the YAML is parsed (small, offline); connections, Spark, Kafka and Great Expectations
are touched by the tasks at run time, never here.
"""

from __future__ import annotations

from recon.config import default_pipelines_path, load_pipelines
from recon_airflow.factory import build_dags, register

_PIPELINES_FILE = default_pipelines_path()

for _cfg in load_pipelines(_PIPELINES_FILE).values():
    register(globals(), build_dags(_cfg, _PIPELINES_FILE), _PIPELINES_FILE)
