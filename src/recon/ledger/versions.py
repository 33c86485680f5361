"""Ledger versions, once for both engines: what a manifest holds, which entries a version is
made of, when it is compacted, and how its entries are read (the rule steps
``00_ledger_entries`` and ``00_ledger_newest``). What differs by engine is file IO only, behind
:class:`EntryStore` (``recon.ledger.spark``, ``recon.ledger.local``).
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Protocol

from recon.rules import LEDGER_READ_STEPS
from recon.rules.run import RuleEngine, run_steps

MANIFEST_SUFFIX = ".manifest"
RESULTS_ENTRY = "results-of:"
#: A version listing more entries than this is written as one entry instead.
COMPACT_AFTER = 16


def is_manifest(path: str) -> bool:
    return path.rstrip("/").endswith(MANIFEST_SUFFIX)


def local_path(path: str) -> str:
    """A Spark-style ``file:`` path as a plain one."""
    return path[len("file:") :] if path.startswith("file:") else path


def results_entry(path: str, run_id: str) -> str:
    """A manifest entry that is a run's results directory (``recon.ledger`` explains)."""
    return RESULTS_ENTRY + json.dumps([run_id, path])


def parse_entry(entry: str) -> tuple[str, str | None]:
    """``(directory, run id)`` of a results entry; ``(directory, None)`` of an entry directory."""
    if entry.startswith(RESULTS_ENTRY):
        run_id, path = json.loads(entry[len(RESULTS_ENTRY) :])
        return str(path), str(run_id)
    return entry, None


def manifest_rows(entries: list[str]) -> list[tuple[int, str, str | None]]:
    """``(seq, entry, results_of)`` per entry, as a manifest stores them."""
    return [(seq, *parse_entry(e)) for seq, e in enumerate(entries)]


def entry_from_row(entry: str, results_of: str | None) -> str:
    return results_entry(entry, results_of) if results_of else entry


def entries_from_rows(rows: list[tuple[int, str, str | None]]) -> list[str]:
    """A manifest's rows ``(seq, entry, results_of)`` as its entries, oldest first."""
    return [entry_from_row(entry, of) for _, entry, of in sorted(rows, key=lambda r: r[0])]


class EntryStore(Protocol):
    """One engine's file IO for ledger versions. Relations are the engine's own."""

    def read_manifest(self, path: str | None) -> list[str]:
        """The entries of a version, oldest first (none for no version; a path that is not a
        manifest is one entry: a whole ledger written before manifests)."""

    def register(self, rules: RuleEngine, entries: list[str], ids: Any | None) -> bool:
        """Inputs ``ledger_stored`` and ``ledger_results`` of ``rules`` from the entries: every
        entry (``ids`` None), or at least every entry of the messages in relation ``ids`` (a
        ``message_id`` column): which files are read, and how, is the store's access strategy.
        False when there are no entries at all."""

    def write_entry(self, rules: RuleEngine, relation: Any, directory: str, seq: int) -> None:
        """Write ``schemas.LEDGER`` rows (a relation of ``rules``) as the entry directory at
        manifest place ``seq``."""

    def write_results(self, rules: RuleEngine, relation: Any, directory: str) -> str:
        """Write a run's results (``schemas.RESULT``) as a directory; returns its data file."""

    def write_manifest(self, path: str, entries: list[str]) -> None:
        """Write the manifest of a version (``manifest_rows``)."""

    def is_empty(self, rules: RuleEngine, relation: Any) -> bool:
        """Whether ``relation`` has no row."""


def read_newest(
    rules: RuleEngine, entry_store: EntryStore, entries: list[str], ids: Any | None = None
) -> Any | None:
    """The newest entry of each message (relation ``ledger_newest`` of ``rules``): of every
    message (``ids`` None), or of the messages in ``ids``; None when there is no ledger yet.

    Entries of other messages may come with them (a store's access strategy may let some
    through); they meet no fact of the run, so they yield no verdict and are carried unchanged.
    """
    if not entry_store.register(rules, entries, ids):
        return None
    run_steps(rules, LEDGER_READ_STEPS)
    return rules.relation("ledger_newest")


def write_version(
    rules: RuleEngine,
    entry_store: EntryStore,
    ledger_dir: str,
    name: str,
    base: list[str],
    *,
    delta: Any | None,
    results: tuple[Any, str] | None = None,
) -> tuple[str, str | None]:
    """Write a run's entries and the manifest of the version they make.

    :param ledger_dir: the pipeline's ledger directory.
    :param name: unique to this attempt of the run (files are never overwritten).
    :param base: the entries of the version the run started from.
    :param delta: ``schemas.LEDGER`` rows of the messages the run touched (all of them, or,
        with ``results``, those the ledger knew), or None for none.
    :param results: ``(relation, run id)``: the run's results, written once into the version,
        where they stand for the entries of the messages new to the ledger.
    :returns: the manifest's path, and the results' data file (when ``results`` was given).
    """
    root = ledger_dir.rstrip("/")
    entries = list(base)
    results_file = None
    if results is not None:
        relation, run_id = results
        directory = f"{root}/{name}.results"
        results_file = entry_store.write_results(rules, relation, directory)
        entries.append(results_entry(directory, run_id))
    # An empty delta adds no entry: compaction comes every COMPACT_AFTER runs as it is.
    if delta is not None and not entry_store.is_empty(rules, delta):
        entry = f"{root}/{name}"
        entry_store.write_entry(rules, delta, entry, len(entries))
        entries.append(entry)
    if len(entries) > COMPACT_AFTER:
        entries = [_compact(rules, entry_store, entries, root, name)]
    manifest = f"{root}/{name}{MANIFEST_SUFFIX}"
    entry_store.write_manifest(manifest, entries)
    return manifest, results_file


def _compact(
    rules: RuleEngine, entry_store: EntryStore, entries: list[str], root: str, name: str
) -> str:
    """The whole effective ledger as one entry; read in a namespace of its own, so that the
    run's relations (its ``ledger_newest`` among them) stay as they are."""
    scratch = rules.scratch()
    try:
        merged = read_newest(scratch, entry_store, entries)
        assert merged is not None  # the entries are there: they were just listed
        compacted = f"{root}/{name}-compacted-{uuid.uuid4().hex[:8]}"
        entry_store.write_entry(scratch, merged, compacted, 0)
    finally:
        scratch.close()
    return compacted
