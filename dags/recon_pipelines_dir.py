"""The reconciliation and repair DAGs of each pipeline declared in the ``*.yaml`` files of
$RECON_PIPELINES_DIR.

A second DAG file, so that a broken file there fails only these DAGs, not the main file's. Only
wiring, as in ``recon_pipelines.py``; a name the main file also declares is an import error.
"""

from __future__ import annotations

import os

from recon.config import default_pipelines_path, load_pipeline_dir, load_pipelines
from recon_airflow.factory import build_dags, register

_MAIN = default_pipelines_path()
# The main file's own problems are reported by its own DAG file, not twice.
_TAKEN = dict.fromkeys(load_pipelines(_MAIN), _MAIN) if os.path.isfile(_MAIN) else {}

for _file, _cfg in load_pipeline_dir(taken=_TAKEN):
    register(globals(), build_dags(_cfg, _file), _file)
