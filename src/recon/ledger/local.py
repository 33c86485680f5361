"""The ledger versions of ``recon.ledger``, read and written with DuckDB on local files.

Same layout as ``recon.ledger.spark`` writes, so a pipeline moves between engines freely.
Entries written here leave ``id_hash`` null (the Spark engine computes a missing one). Its
access strategy for a run's entries:

* hot entries (at most ``COMPACT_AFTER`` runs' worth): two passes, so that they cost one
  column. The first matches the messageIds of every hot entry against the run's and notes which
  directory holds each met message's newest entry; the second reads whole entries only from
  those directories, and only for those messages.
* segments (the rest of history): the run's ids are probed against each segment's membership
  filter, and the few it lets through read from the row groups that hold them
  (``recon.ledger.local_segments``). A segment without a filter this store can use (written by
  the Spark engine, or under another hash) is scanned, one column wide.
"""

from __future__ import annotations

import glob
import json
import os
from typing import Any

from recon.engines.duckdb import DuckDBRules
from recon.errors import ReconError
from recon.ledger import local_segments as segments
from recon.ledger.versions import (
    entries_from_rows,
    is_manifest,
    local_path,
    manifest_rows,
    segment_of,
)
from recon.ledger.versions import parse_entry as _parse
from recon.rules import INPUT_COLUMNS, LEDGER_READ_STEPS, OPTIONAL_COLUMNS
from recon.rules.render import literal
from recon.rules.run import RuleEngine, run_steps

_LEDGER_COLUMNS = [c for c, _ in INPUT_COLUMNS["ledger"] + OPTIONAL_COLUMNS["ledger"]]


class LedgerMissing(ReconError):
    """A ledger version, or an entry it lists, is not on disk: judging without it would take
    every message it knows for new, so the run stops."""


def _missing(path: str, what: str) -> LedgerMissing:
    return LedgerMissing(
        f"ledger {what} {path} is missing (removed by hand, or by a prune given another data "
        "directory): the run stops rather than judge without the earlier runs' facts"
    )


def _con(rules: RuleEngine) -> Any:
    """The DuckDB connection under ``rules``: COPY ... TO is DuckDB's, not a rule statement."""
    if not isinstance(rules, DuckDBRules):
        raise TypeError(f"the local ledger store runs on DuckDB's rules, not {type(rules)}")
    return rules.con


def _files(directory: str) -> list[str]:
    return sorted(glob.glob(os.path.join(local_path(directory), "*.parquet")))


def _parquet(files: list[str]) -> str:
    listed = ", ".join(literal(f) for f in files)
    return f"read_parquet([{listed}], union_by_name = true)"


class LocalEntryStore:
    """:class:`recon.ledger.versions.EntryStore` in DuckDB, on local files."""

    def read_manifest(self, path: str | None) -> list[str]:
        if not path:
            return []
        path = local_path(path)
        if not is_manifest(path):
            return [path]
        if not os.path.isdir(path):
            raise _missing(path, "version")
        rows = []
        for part in sorted(glob.glob(os.path.join(path, "part-*"))):
            with open(part, encoding="utf-8") as fh:
                for line in fh:
                    if line.strip():
                        row = json.loads(line)
                        rows.append((int(row["seq"]), str(row["entry"]), row.get("results_of"),
                                     row.get("segment")))  # fmt: skip
        return entries_from_rows(rows)

    def register(self, rules: RuleEngine, entries: list[str], ids: Any | None) -> bool:
        for entry in entries:
            if not os.path.isdir(local_path(_parse(entry)[0])):
                raise _missing(_parse(entry)[0], "entry")
        places = {seq: _files(_parse(entry)[0]) for seq, entry in enumerate(entries)}
        places = {seq: files for seq, files in places.items() if files}
        if not places:
            return False
        if ids is None:
            self._use(rules, entries, {s: (_parquet(f), "true") for s, f in places.items()})
            return True
        hot = {s: f for s, f in places.items() if segment_of(entries[s]) is None}
        cold = {s: local_path(_parse(entries[s])[0]) for s in places if s not in hot}
        tables, scan = segments.lookups(_con(rules), cold, ids) if cold else ({}, [])
        picks = {s: (_parquet(places[s]), f"message_id IN (SELECT message_id FROM {ids})")
                 for s in scan}  # fmt: skip
        picks.update({s: (table, "true") for s, table in tables.items()})
        if hot:
            self._use(rules, entries, {s: (_parquet(f), "true") for s, f in hot.items()})
            run_steps(rules, LEDGER_READ_STEPS[:1])  # ledger_entries: a view, one column wide
            rules.define(
                "ledger_met",
                "SELECT message_id, max(_seq) AS _seq FROM ledger_entries "
                f"WHERE message_id IN (SELECT message_id FROM {ids}) GROUP BY message_id",
                keep=True,
            )
            holding = {int(s) for (s,) in rules.rows("(SELECT DISTINCT _seq FROM ledger_met)")}
            met = "message_id IN (SELECT message_id FROM ledger_met)"
            picks.update({s: (_parquet(f), met) for s, f in hot.items() if s in holding})
        self._use(rules, entries, picks)
        return True

    @staticmethod
    def _use(rules: RuleEngine, entries: list[str], places: dict[int, tuple[str, str]]) -> None:
        """Inputs ``ledger_stored`` and ``ledger_results`` over the entries at ``places``,
        each read from a relation (its files, or the rows looked up in it) and filtered."""
        stored, results = [], []
        for seq, (source, where) in sorted(places.items()):
            run_id = _parse(entries[seq])[1]
            if run_id is None:
                stored.append(f"SELECT *, {seq} AS _seq FROM {source} WHERE {where}")
            else:
                results.append(
                    f"SELECT *, {literal(run_id)} AS first_run_id, {seq} AS _seq "
                    f"FROM {source} WHERE {where}"
                )
        for name, selects in (("ledger_stored", stored), ("ledger_results", results)):
            relation = None
            if selects:
                relation = f"recon_{name}_files"
                rules.define(relation, " UNION ALL BY NAME ".join(selects))
            rules.use(name, relation)

    def write_entry(self, rules: RuleEngine, relation: Any, directory: str, seq: int) -> None:
        directory = local_path(directory)
        os.makedirs(directory, exist_ok=False)
        target = os.path.join(directory, "part-00000.parquet")
        segments.copy_parquet(_con(rules), _entry_rows(relation, seq), target)
        open(os.path.join(directory, "_SUCCESS"), "w").close()

    def write_segment(self, rules: RuleEngine, relation: Any, directory: str, seq: int) -> int:
        directory = local_path(directory)
        os.makedirs(directory, exist_ok=False)
        rows = segments.write(_con(rules), _entry_rows(relation, seq), directory)
        open(os.path.join(directory, "_SUCCESS"), "w").close()
        return rows

    def write_results(self, rules: RuleEngine, relation: Any, directory: str) -> str:
        directory = local_path(directory)
        os.makedirs(directory, exist_ok=False)
        target = os.path.join(directory, "part-00000.parquet")
        segments.copy_parquet(_con(rules), f"SELECT * FROM {relation}", target)
        open(os.path.join(directory, "_SUCCESS"), "w").close()
        return target

    def write_manifest(self, path: str, entries: list[str]) -> None:
        path = local_path(path)
        os.makedirs(path, exist_ok=False)
        with open(os.path.join(path, "part-00000.json"), "w", encoding="utf-8") as fh:
            for seq, entry, results_of, segment in manifest_rows(entries):
                row = {"seq": seq, "entry": entry, "results_of": results_of, "segment": segment}
                fh.write(json.dumps({k: v for k, v in row.items() if v is not None}) + "\n")
        open(os.path.join(path, "_SUCCESS"), "w").close()

    def is_empty(self, rules: RuleEngine, relation: Any) -> bool:
        return not rules.rows(f"(SELECT 1 FROM {relation} LIMIT 1)")


def _entry_rows(relation: str, seq: int) -> str:
    """A query of ``schemas.LEDGER`` rows as an entry stores them, with its manifest place."""
    cols = ", ".join(f'"{c}"' for c in _LEDGER_COLUMNS)
    return (
        f"SELECT {cols}, NULL::BIGINT AS id_hash, {int(seq)}::INTEGER AS entry_seq FROM {relation}"
    )
