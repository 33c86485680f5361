"""Ledger versions, once for both engines: what a manifest holds, which entries a version is
made of, when and how it is compacted into segments, and how its entries are read (the rule
steps ``00_ledger_entries`` and ``00_ledger_newest``). What differs by engine is file IO and
access strategy only, behind :class:`EntryStore` (``recon.ledger.spark``, ``recon.ledger.local``).
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Protocol

from recon.rules import LEDGER_READ_STEPS
from recon.rules.run import RuleEngine, run_steps

MANIFEST_SUFFIX = ".manifest"
RESULTS_ENTRY = "results-of:"
SEGMENT_ENTRY = "segment:"
#: A version listing more hot entries (runs' deltas and results) than this merges them into a
#: segment.
COMPACT_AFTER = 16
#: This many segments of one level, newest last, are merged into one of the next level ...
MERGE_FANOUT = 4
#: ... unless that merge would write more rows than this: inside a run, a bigger rewrite would
#: hold the run up for minutes. Segments of the top level then accumulate, each costing a run
#: one membership probe.
MERGE_MAX_ROWS = 64_000_000


def is_manifest(path: str) -> bool:
    return path.rstrip("/").endswith(MANIFEST_SUFFIX)


def local_path(path: str) -> str:
    """A Spark-style ``file:`` path as a plain one."""
    return path[len("file:") :] if path.startswith("file:") else path


def results_entry(path: str, run_id: str) -> str:
    """A manifest entry that is a run's results directory (``recon.ledger`` explains)."""
    return RESULTS_ENTRY + json.dumps([run_id, path])


def segment_entry(path: str, level: int, rows: int) -> str:
    """A manifest entry that is a segment: an entry directory sorted by messageId, written by a
    compaction, ``rows`` rows, made by merges up to ``level`` (``recon.ledger`` explains)."""
    return SEGMENT_ENTRY + json.dumps([path, level, rows])


def parse_entry(entry: str) -> tuple[str, str | None]:
    """``(directory, run id)`` of a results entry; ``(directory, None)`` of an entry directory
    or a segment."""
    if entry.startswith(RESULTS_ENTRY):
        run_id, path = json.loads(entry[len(RESULTS_ENTRY) :])
        return str(path), str(run_id)
    if entry.startswith(SEGMENT_ENTRY):
        return str(json.loads(entry[len(SEGMENT_ENTRY) :])[0]), None
    return entry, None


def segment_of(entry: str) -> tuple[int, int] | None:
    """``(level, rows)`` of a segment entry; None of any other entry."""
    if not entry.startswith(SEGMENT_ENTRY):
        return None
    _, level, rows = json.loads(entry[len(SEGMENT_ENTRY) :])
    return int(level), int(rows)


ManifestRow = tuple[int, str, "str | None", "str | None"]


def manifest_rows(entries: list[str]) -> list[ManifestRow]:
    """``(seq, entry, results_of, segment)`` per entry, as a manifest stores them (``segment``:
    ``"[level, rows]"`` of a segment)."""
    rows: list[ManifestRow] = []
    for seq, entry in enumerate(entries):
        segment = segment_of(entry)
        rows.append((seq, *parse_entry(entry), None if segment is None else json.dumps(segment)))
    return rows


def entry_from_row(entry: str, results_of: str | None, segment: str | None = None) -> str:
    if segment:
        level, rows = json.loads(segment)
        return segment_entry(entry, level, rows)
    return results_entry(entry, results_of) if results_of else entry


def entries_from_rows(rows: list[ManifestRow]) -> list[str]:
    """A manifest's rows ``(seq, entry, results_of, segment)`` as its entries, oldest first."""
    return [entry_from_row(*row[1:]) for row in sorted(rows, key=lambda r: r[0])]


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

    def write_segment(self, rules: RuleEngine, relation: Any, directory: str, seq: int) -> int:
        """Write ``schemas.LEDGER`` rows as a segment at manifest place ``seq``: an entry
        directory sorted by messageId, with whatever lets this store find a run's messages in
        it without a scan. Returns how many rows it holds."""

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
    entries = _compacted(rules, entry_store, entries, root, name)
    manifest = f"{root}/{name}{MANIFEST_SUFFIX}"
    entry_store.write_manifest(manifest, entries)
    return manifest, results_file


def _compacted(
    rules: RuleEngine, entry_store: EntryStore, entries: list[str], root: str, name: str
) -> list[str]:
    """The version's entries once its hot entries, past :data:`COMPACT_AFTER`, are merged into
    a level-0 segment, and full levels of segments into the next (a size-tiered merge: a
    message's entry is rewritten about once per level, never with all of history at once).

    Segments come first in a manifest, oldest first, hot entries after them: a merge replaces
    a run of neighbours, so the newest entry of a message stays the last one listed.
    """
    first_hot = next((i for i, e in enumerate(entries) if segment_of(e) is None), len(entries))
    if len(entries) - first_hot <= COMPACT_AFTER:
        return entries
    entries = entries[:first_hot] + [_merge(rules, entry_store, entries, first_hot, root, name, 0)]
    while len(entries) >= MERGE_FANOUT:
        tail = [segment_of(e) for e in entries[-MERGE_FANOUT:]]
        levels = {s[0] for s in tail if s is not None}
        if None in tail or len(levels) != 1 or sum(s[1] for s in tail if s) > MERGE_MAX_ROWS:
            break
        start = len(entries) - MERGE_FANOUT
        merged = _merge(rules, entry_store, entries, start, root, name, levels.pop() + 1)
        entries = entries[:start] + [merged]
    return entries


def _merge(
    rules: RuleEngine, entry_store: EntryStore, entries: list[str], start: int, root: str,
    name: str, level: int,
) -> str:  # fmt: skip
    """``entries[start:]`` merged into one segment at place ``start``: the newest entry of each
    of their messages, read in a namespace of its own, so that the run's relations (its
    ``ledger_newest`` among them) stay as they are."""
    scratch = rules.scratch()
    try:
        merged = read_newest(scratch, entry_store, entries[start:])
        assert merged is not None  # the entries are there: they were just listed
        directory = f"{root}/{name}-compacted-L{level}-{uuid.uuid4().hex[:8]}"
        rows = entry_store.write_segment(scratch, merged, directory, start)
    finally:
        scratch.close()
    return segment_entry(directory, level, rows)
