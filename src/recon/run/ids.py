"""The one rule for a run id, wherever one comes in (``recon run --run-id``, an Airflow run id,
a repair plan's run, ``recon prune``): it names folders under the data directory
(``recon.run.paths``), so it must never name a parent or the folder itself.

A run id is 1 to 250 characters, none of them a control character (NUL included) or a path
separator, and not only dots (``.`` and ``..`` are the folder and its parent). Airflow's default
run-id pattern accepts ``..`` for a triggered run: such a run stops here, before it writes or
removes anything.
"""

from __future__ import annotations

import unicodedata

from recon.errors import ReconError

MAX_RUN_ID_LENGTH = 250


class InvalidRunId(ReconError):
    """A run id that cannot name a run's folders (a user mistake: no retry helps)."""


def run_id_problem(run_id: object) -> str | None:
    """Why ``run_id`` is not a usable run id, or None when it is."""
    if not isinstance(run_id, str) or not run_id:
        return "it is empty"
    if len(run_id) > MAX_RUN_ID_LENGTH:
        return f"it is longer than {MAX_RUN_ID_LENGTH} characters"
    if set(run_id) <= {"."}:
        return "it is only dots, which name a folder or its parent"
    if "/" in run_id or "\\" in run_id:
        return "it holds a path separator"
    if any(unicodedata.category(c).startswith("C") for c in run_id):
        return "it holds a control or unassigned character"
    return None


def check_run_id(run_id: str, pipeline: str | None = None) -> str:
    """``run_id`` if it is usable (:func:`run_id_problem`).

    :param pipeline: named in the error.
    :raises InvalidRunId: it is not, with why and what to use instead.
    """
    problem = run_id_problem(run_id)
    if problem is None:
        return run_id
    where = f"pipeline '{pipeline}': " if pipeline else ""
    raise InvalidRunId(
        f"{where}run id {run_id!r} cannot be used: {problem}; use 1 to {MAX_RUN_ID_LENGTH} "
        "printable characters without '/' or '\\' (Airflow's manual__<time> ids are fine)"
    )
