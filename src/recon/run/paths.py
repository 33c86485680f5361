"""Where a pipeline's files live under the data directory: each run's window parts and results,
and the pipeline's ledger versions."""

from __future__ import annotations

import os
import shutil
import uuid

from recon.ledger.versions import local_path
from recon.run.ids import check_run_id

#: The folders of a data directory that hold one folder per pipeline (``repairs``: the files of
#: repair plans, ``<plan id>.json``).
WINDOWS, RESULTS, LEDGER, REPAIRS = "windows", "results", "ledger", "repairs"


def pipeline_windows(data_dir: str, pipeline: str) -> str:
    """The folder of a pipeline's run folders, each holding a run's window parts."""
    return f"{data_dir.rstrip('/')}/{WINDOWS}/{pipeline}"


def window_path(data_dir: str, pipeline: str, run_id: str, part: str) -> str:
    """:raises recon.run.ids.InvalidRunId: ``run_id`` could name a folder outside its own."""
    run = safe_name(check_run_id(run_id, pipeline))
    return f"{pipeline_windows(data_dir, pipeline)}/{run}/{part}"


def results_path(data_dir: str, pipeline: str, run_id: str) -> str:
    """Every verdict row of a run (delivered included): what the validation step reads.

    :raises recon.run.ids.InvalidRunId: ``run_id`` could name a folder outside its own.
    """
    return (
        f"{data_dir.rstrip('/')}/{RESULTS}/{pipeline}/{safe_name(check_run_id(run_id, pipeline))}"
    )


def ledger_dir(data_dir: str, pipeline: str) -> str:
    """The pipeline's ledger versions (``recon.ledger``): manifests and entry directories."""
    return f"{data_dir.rstrip('/')}/{LEDGER}/{pipeline}"


def spill_dir(data_dir: str) -> str:
    """Where the local engine's DuckDB spills what does not fit its memory limit."""
    return os.path.join(data_dir, "duckdb-spill")


def data_dir_of(ledger_path: str) -> str | None:
    """The data directory a ledger version was written under (None: a path outside one)."""
    marker = f"/{LEDGER}/"
    return ledger_path.rsplit(marker, 1)[0] if marker in ledger_path else None


def version_name(run_id: str) -> str:
    """A name for the ledger files of one attempt of a run: never one an earlier attempt used."""
    return f"{safe_name(check_run_id(run_id))}-{uuid.uuid4().hex[:8]}"


def safe_name(run_id: str) -> str:
    """A run id as a file name (the folder of its windows and of its results): never one that
    names a folder's parent or itself, even for an id :func:`recon.run.ids.check_run_id` refuses
    (a name read back from the results database by ``recon prune``)."""
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in run_id)
    return name if name.strip(".") else name.replace(".", "_") or "_"


def remove_tree(path: str, parent: str) -> None:
    """Remove the folder ``path``, which must lie strictly inside ``parent``.

    :raises ValueError: it does not (a name that climbed out of its folder): nothing is removed.
    """
    target, root = os.path.realpath(local_path(path)), os.path.realpath(local_path(parent))
    if os.path.commonpath([target, root]) != root or target == root:
        raise ValueError(f"refusing to remove {path}: it is not inside {parent}")
    shutil.rmtree(target)


def is_local(path: str) -> bool:
    """Whether ``path`` is on this machine's file system (plain, or a ``file:`` URI)."""
    return "://" not in path or path.startswith("file:")


def publish_results(written: str, out: str) -> None:
    """Make the results a run wrote into its ledger version (a Parquet file, or a directory of
    them) the run's results at ``out`` (``results_path``): hard links, so that a later re-run of
    the run id, which replaces ``out``, never touches the version a pipeline may point at.

    :param written: a local path, as :func:`is_local` says (a copy where links fail).
    """
    written, out = local_path(written), local_path(out)
    if os.path.lexists(out):
        remove_tree(out, os.path.dirname(os.path.dirname(out)))
    os.makedirs(out)
    if os.path.isdir(written):
        pairs = [(os.path.join(written, f), os.path.join(out, f)) for f in os.listdir(written)]
    else:
        pairs = [(written, os.path.join(out, "part-00000.parquet"))]
    for source, target in pairs:
        try:
            os.link(source, target)
        except OSError:  # another file system: a copy
            shutil.copyfile(source, target)
