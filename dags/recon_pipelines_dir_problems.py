"""Why a ``*.yaml`` file of $RECON_PIPELINES_DIR makes no DAG: while one is refused, this DAG
file fails to import, listing each refused file's problems (each naming the file and the key),
and Airflow shows them as its import error. It makes no DAG itself: an import error of the file
that makes the folder's DAGs (``recon_pipelines_dir.py``) would stop every file's DAGs.
"""

from __future__ import annotations

from recon.errors import ConfigError
from recon_airflow.folder import folder_problems

_problems = folder_problems()
if _problems:
    raise ConfigError(
        "these files of the pipelines folder make no DAG until fixed (the folder's other files "
        "run):\n" + "\n".join(_problems),
        _problems,
    )
