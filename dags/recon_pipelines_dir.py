"""The reconciliation and repair DAGs of each pipeline declared in the ``*.yaml`` files of
$RECON_PIPELINES_DIR.

A DAG file of its own, so that a broken file there fails none of the main file's DAGs; and each
folder file stands alone: a file that is invalid, or makes a DAG id another file makes, makes no
DAG and is the import error of ``recon_pipelines_dir_problems.py``, naming the file and the key,
while the other files' DAGs are still made here (``recon_airflow.folder``). Only wiring, as in
``recon_pipelines.py``.
"""

from __future__ import annotations

from recon_airflow.folder import folder_dags

globals().update(folder_dags())
