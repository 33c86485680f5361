"""The results store: schema ``recon`` in PostgreSQL, and the one transaction that commits a run.

A run's discrepancies, its ``recon.runs`` row, the watermarks and the pointer to the new ledger
version are written in one transaction, under a per-pipeline advisory lock and a compare-and-set on
the run the snapshot started from: two runs of one pipeline can both compute, only one advances.

Its modules:

* :mod:`recon.store.schema`: the tables, created or updated from ``recon/sql/schema.sql``;
* :mod:`recon.store.runs`: a run's snapshot and status, where the pipeline stands, run history;
* :mod:`recon.store.commit`: the commit transaction and the ``COPY`` of the discrepancy rows;
* :mod:`recon.store.pipelines`: resetting or forgetting a pipeline;
* :mod:`recon.store.prune`: what removing a pipeline's old runs must keep, and their removal.

Callers use the names below (``from recon import store``; ``store.commit_run(...)``).
"""

from __future__ import annotations

from recon.store.commit import (
    DISCREPANCY_COLUMNS,
    CommitInterrupted,
    ConcurrentRunError,
    DiscrepancyFile,
    ResultsRefused,
    RunOutcome,
    commit_accepted,
    commit_run,
    moves_state,
)
from recon.store.pipelines import forget_pipeline, reset_pipeline
from recon.store.runs import (
    LATENCY_FIGURES,
    PipelineState,
    RunNotFound,
    RunRecord,
    committed_counts,
    committed_latency,
    find_run,
    list_runs,
    load_state,
    mark_error,
    mark_running,
    record_snapshot,
)
from recon.store.schema import ensure_schema

__all__ = [
    "DISCREPANCY_COLUMNS",
    "CommitInterrupted",
    "ResultsRefused",
    "ConcurrentRunError",
    "DiscrepancyFile",
    "PipelineState",
    "RunNotFound",
    "RunOutcome",
    "RunRecord",
    "commit_accepted",
    "commit_run",
    "LATENCY_FIGURES",
    "committed_counts",
    "committed_latency",
    "ensure_schema",
    "find_run",
    "forget_pipeline",
    "list_runs",
    "load_state",
    "mark_error",
    "mark_running",
    "moves_state",
    "record_snapshot",
    "reset_pipeline",
]
