"""The DAGs of the pipelines folder ($RECON_PIPELINES_DIR), each YAML file standing alone.

Airflow keeps or drops a DAG file's DAGs together: an import error marks every DAG of that file
stale. So two DAG files read the folder. ``dags/recon_pipelines_dir.py`` makes the DAGs of every
file that is valid and makes no DAG id another file makes (:func:`folder_dags`), and never fails
for a file's mistake; ``dags/recon_pipelines_dir_problems.py`` fails to import while a file is
refused, listing each refused file's problems (:func:`folder_problems`), each line naming the
file and the key: Airflow shows them as that DAG file's import error.

A DAG id two files make (a pipeline name, or a pipeline ``repair_x`` beside a pipeline ``x``
elsewhere: both make ``recon_repair_x``) refuses both folder files, each naming the other, so a
new file never takes over another team's DAG; a name the pipeline file ($RECON_PIPELINES) declares
stays that file's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from recon_airflow.factory import DAG_PREFIX, build_dags, dag_id_for, register, repair_dag_id_for


@dataclass(frozen=True)
class FolderPlan:
    """What the folder's files make: the pipelines to make DAGs of, and the refused files'
    problems.

    :param accepted: ``(file, pipeline)`` pairs, each pipeline run with the file it came from.
    :param problems: one entry per problem of a refused file, each starting with that file.
    """

    accepted: list[tuple[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _dag_ids(pipeline: str) -> list[str]:
    return [dag_id_for(pipeline), repair_dag_id_for(pipeline)]


def plan_folder(
    directory: str | os.PathLike[str] | None = None,
    main_file: str | os.PathLike[str] | None = None,
) -> FolderPlan:
    """Which files of the folder make their DAGs, and why the others do not.

    :param directory: the folder; ``None`` means ``$RECON_PIPELINES_DIR``.
    :param main_file: the pipeline file; ``None`` means ``$RECON_PIPELINES`` (its default).
    """
    from recon.config import declared_in_file, pipeline_files
    from recon.errors import ConfigError

    try:
        main = declared_in_file(main_file)
    except ConfigError:
        main = {}  # the main file's own DAG file reports its problems; its DAGs are gone
    made_by: dict[str, list[str]] = {}
    for name, path in main.items():
        for dag_id in _dag_ids(name):
            made_by.setdefault(dag_id, []).append(path)
    plan = FolderPlan()
    valid = []
    for file in pipeline_files(directory):
        if file.error is not None:
            plan.problems.append(str(file.error))
            continue
        ids = [dag_id for name in file.pipelines for dag_id in _dag_ids(name)]
        twice = sorted({dag_id for dag_id in ids if ids.count(dag_id) > 1})
        if twice:
            plan.problems.extend(
                f"{file.path}: DAG id '{dag_id}' is made twice (a pipeline named "
                f"'{dag_id.removeprefix(DAG_PREFIX)}' clashes with the repair DAG of another): "
                "rename one of the pipelines"
                for dag_id in twice
            )
            continue
        valid.append((file, ids))
        for dag_id in ids:
            made_by.setdefault(dag_id, []).append(file.path)
    for file, ids in valid:
        clashes = [(i, other) for i in ids for other in made_by[i] if other != file.path]
        plan.problems.extend(
            f"{file.path}: DAG id '{dag_id}' is also made by {other}: rename the pipeline in "
            "one of the files"
            for dag_id, other in clashes
        )
        if not clashes:
            plan.accepted.extend((file.path, cfg) for cfg in file.pipelines.values())
    return plan


def folder_dags(directory: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The DAGs of the folder's accepted files (:func:`plan_folder`), by DAG id.

    :param directory: the folder; ``None`` means ``$RECON_PIPELINES_DIR``.
    """
    dags: dict[str, Any] = {}
    for path, cfg in plan_folder(directory).accepted:
        register(dags, build_dags(cfg, path), path)
    return dags


def folder_problems(directory: str | os.PathLike[str] | None = None) -> list[str]:
    """The problems of the folder's refused files (:func:`plan_folder`), each naming its file.

    :param directory: the folder; ``None`` means ``$RECON_PIPELINES_DIR``.
    """
    return plan_folder(directory).problems
