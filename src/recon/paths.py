"""Where a run's files live under the data directory: its window parts and its results."""

from __future__ import annotations


def window_path(data_dir: str, pipeline: str, run_id: str, part: str) -> str:
    return f"{data_dir.rstrip('/')}/windows/{pipeline}/{_safe(run_id)}/{part}"


def results_path(data_dir: str, pipeline: str, run_id: str) -> str:
    """Every verdict row of a run (delivered included): what the validation step reads."""
    return f"{data_dir.rstrip('/')}/results/{pipeline}/{_safe(run_id)}"


def _safe(run_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)
