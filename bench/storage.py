"""What a pipeline's ledger holds on disk (issue 18's storage figure): the current version's
entries (what the next run starts from) and the whole ledger folder (every version and entry
kept, as a pipeline without ``recon prune`` keeps them)."""

from __future__ import annotations

import os


def tree_bytes(path: str) -> int:
    """The bytes of a file, or of a folder and all it holds, as ``recon prune`` counts them
    (0 when it does not exist)."""
    from recon.prune.plan import tree_stat

    return tree_stat(path)[0] if os.path.lexists(path) else 0


def ledger_bytes(pipeline: str) -> dict[str, int]:
    """``current``: the entries the pipeline's current ledger version lists (and its manifest);
    ``folder``: everything under the pipeline's ledger folder."""
    from recon import settings
    from recon.ledger.local import LocalEntryStore
    from recon.ledger.versions import local_path, parse_entry
    from recon.run.paths import ledger_dir
    from recon.run.steps import results_db
    from recon.store.runs import load_state

    with results_db() as pg:
        manifest = load_state(pg, pipeline).ledger_path
    current = 0
    if manifest:
        current = tree_bytes(local_path(manifest))
        for entry in LocalEntryStore().read_manifest(manifest):
            current += tree_bytes(local_path(parse_entry(entry)[0]))
    return {"current": current, "folder": tree_bytes(ledger_dir(settings.data_dir(), pipeline))}
