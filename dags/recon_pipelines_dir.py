"""The reconciliation and repair DAGs of each pipeline declared in the ``*.yaml`` files of
$RECON_PIPELINES_DIR.

A second DAG file, so that a broken file there fails only these DAGs, not the main file's. Only
wiring, as in ``recon_pipelines.py``; a name the main file also declares is an import error.
"""

from __future__ import annotations

from recon.config import declared_in_file, load_pipeline_dir
from recon_airflow.factory import build_dags, register

# The main file's own problems are reported by its own DAG file, not twice.
for _file, _cfg in load_pipeline_dir(taken=declared_in_file()):
    register(globals(), build_dags(_cfg, _file), _file)
