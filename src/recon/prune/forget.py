"""``recon forget``: remove everything stored for a pipeline that is no longer declared: its rows
in every table of schema ``recon``, its folders under the data directory (windows, results,
ledger, repair plans) and its objects in the GX project (validations and their pages, its
checkpoint, validation definition and dataframe assets, one per pipeline in the project's YAML,
which every validation parses).

A pipeline still declared is refused: its next run would start from nothing, as after ``recon
reset``, with its history gone too. Remove it from the YAML first.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field

from recon.config.schema import PIPELINE_NAME_RE
from recon.errors import ReconError
from recon.ledger.versions import local_path
from recon.prune.plan import FOLDERS, tree_stat
from recon.run.paths import is_local


class StillDeclared(ReconError):
    """The pipeline is declared: forgetting it would wipe a live pipeline's history."""


@dataclass
class Forgotten:
    """What a forget removed (or, in a dry run, would remove)."""

    pipeline: str
    runs: int
    folders: dict[str, int] = field(default_factory=dict)  # path -> bytes
    validations: int | None = None  # None: not counted (a dry run does not open GX)

    def as_dict(self) -> dict[str, object]:
        return {"pipeline": self.pipeline, "runs": self.runs, "folders": self.folders,
                "validations": self.validations}  # fmt: skip


def check_forgettable(pipeline: str, declared: dict[str, str]) -> None:
    """:param declared: every declared pipeline, by the file that declares it.

    :raises StillDeclared: ``pipeline`` is one of them.
    :raises ReconError: ``pipeline`` is no pipeline name (it names folders: never ``..``).
    """
    if not PIPELINE_NAME_RE.match(pipeline):
        raise ReconError(f"pipeline '{pipeline}': not a pipeline name")
    if pipeline in declared:
        raise StillDeclared(
            f"pipeline '{pipeline}' is declared in {declared[pipeline]}: remove it there first "
            "(to start it over and keep its history, use `recon reset`)"
        )


def forget(
    pipeline: str,
    data_dir: str,
    *,
    dry_run: bool = False,
    gx_dir: str | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> Forgotten:
    """Remove (unless ``dry_run``) everything stored for ``pipeline``; call
    :func:`check_forgettable` first."""
    from recon import store
    from recon.run.services import results_db

    if not is_local(data_dir):
        raise ReconError(f"pipeline '{pipeline}': the data directory {data_dir} is not local")
    with results_db() as pg:
        store.ensure_schema(pg)
        with pg.cursor() as cur:
            cur.execute("SELECT count(*) FROM recon.runs WHERE pipeline = %s", (pipeline,))
            runs = int(cur.fetchone()[0])
        pg.rollback()
        found = Forgotten(pipeline, runs)
        for folder in FOLDERS:
            path = os.path.join(local_path(data_dir), folder, pipeline)
            if os.path.lexists(path):
                found.folders[path] = tree_stat(path)[0]
        if dry_run:
            return found
        # Rows first: a forget cut short leaves files no row names, which a second one removes.
        store.forget_pipeline(pg, pipeline)
    progress(f"pipeline {pipeline}: {runs} runs and every row removed from the results database")
    from recon.validation import forget_pipeline_validations

    found.validations = forget_pipeline_validations(pipeline, gx_dir)
    progress(f"pipeline {pipeline}: {found.validations} validations and its GX objects removed")
    for path in found.folders:
        shutil.rmtree(path)
    progress(f"pipeline {pipeline}: {len(found.folders)} folders removed")
    return found
