"""The ledger versions of ``recon.ledger``, read and written with DuckDB.

Same layout, so a pipeline moves between engines freely: a version is a manifest (a directory
of JSON lines ``{"seq": n, "entry": path}``, as Spark writes it) listing entry directories of
Parquet files shaped as ``schemas.LEDGER`` plus ``id_hash`` and ``entry_seq``. The newest entry
of a messageId wins. Entries written here leave ``id_hash`` null: the Spark engine computes a
missing hash when it reads them (``recon.ledger.spark.entries_frame``), and this engine selects a
run's entries by the messageId itself, in two passes (:func:`ledger_for`): history is read one
column wide, whole entries only where the run meets their messages.
"""

from __future__ import annotations

import glob
import json
import os
import uuid
from typing import Any

from recon.ledger.spark import (
    COMPACT_AFTER,
    MANIFEST_SUFFIX,
    entry_from_row,
    manifest_rows,
    parse_entry,
    results_entry,
)
from recon.rules.render import POSITION_TYPE

#: A message at one position is stored without lists (``recon/rules/08_ledger_new.sql``).
_OFFSETS = (
    "coalesce(offsets, CASE WHEN first_offset IS NULL THEN []::BIGINT[] ELSE [first_offset] END)"
)
_DERIVED = (
    f"list_transform({_OFFSETS}, o -> {{'topic': topic, 'partition': \"partition\", "
    f"'offset': o}}::{POSITION_TYPE})"
)
LEDGER_COLUMNS = (
    "message_id", "topic", "partition", "first_offset", "offsets", "sink_count", "first_run_id",
    "verdict", "positions",
)  # fmt: skip


def local_path(path: str) -> str:
    """A Spark-style ``file:`` path as a plain one."""
    return path[len("file:") :] if path.startswith("file:") else path


_local = local_path


def read_manifest(path: str | None) -> list[str]:
    """The entry directories of a ledger version, oldest first (none for no version)."""
    if not path:
        return []
    path = _local(path)
    if not path.rstrip("/").endswith(MANIFEST_SUFFIX):
        return [path]
    entries: list[tuple[int, str]] = []
    for part in sorted(glob.glob(os.path.join(path, "part-*"))):
        with open(part, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    row = json.loads(line)
                    entry = entry_from_row(str(row["entry"]), row.get("results_of"))
                    entries.append((int(row["seq"]), entry))
    return [e for _, e in sorted(entries)]


def _files(entry: str) -> list[str]:
    found = sorted(glob.glob(os.path.join(_local(entry), "*.parquet")))
    return found


def entries_view(
    con: Any,
    entries: list[str],
    name: str = "recon_ledger_all",
    *,
    keys_only: bool = False,
    only: set[int] | None = None,
) -> str | None:
    """A view of every entry of every directory with its place in the manifest (``_seq``).

    :param keys_only: only ``message_id`` and ``_seq``: a scan of one column per entry.
    :param only: the places of the entries to include (default: all).
    """
    selects = []
    for seq, entry in enumerate(entries):
        if only is not None and seq not in only:
            continue
        path, run_id = parse_entry(entry)
        files = _files(path)
        if not files:
            continue
        listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
        if run_id is not None:
            selects.append(_results_as_entries(listed, run_id, seq, keys_only=keys_only))
            continue
        if keys_only:
            selects.append(f"SELECT message_id, {seq} AS _seq FROM read_parquet([{listed}])")
            continue
        cols = ", ".join(f'"{c}"' for c in LEDGER_COLUMNS if c not in ("offsets", "positions"))
        described = {
            r[0] for r in con.execute(f"DESCRIBE SELECT * FROM read_parquet([{listed}])").fetchall()
        }
        stored = "positions" if "positions" in described else f"NULL::{POSITION_TYPE}[]"
        selects.append(
            f"SELECT {cols}, {_OFFSETS} AS offsets, coalesce({stored}, {_DERIVED}) AS positions, "
            f"{seq} AS _seq FROM read_parquet([{listed}])"
        )
    if not selects:
        return None
    con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS " + " UNION ALL ".join(selects))
    return name


def _results_as_entries(listed: str, run_id: str, seq: int, *, keys_only: bool = False) -> str:
    """A run's result rows as the entries of their messages (``recon.ledger`` explains)."""
    from recon.rules.render import in_list as _in
    from recon.verdicts import LEDGER_VERDICTS, UNMATCHED

    entry_rows = f"WHERE message_id IS NOT NULL AND verdict IN {_in(LEDGER_VERDICTS)}"
    if keys_only:
        return f"SELECT message_id, {seq} AS _seq FROM read_parquet([{listed}]) {entry_rows}"

    def placed(name: str, empty: str) -> str:
        return f'CASE WHEN verdict IN {_in(UNMATCHED)} THEN {empty} ELSE "{name}" END AS "{name}"'

    run = "'" + run_id.replace("'", "''") + "'"
    return f"""
        SELECT message_id, {placed("topic", "NULL")}, {placed("partition", "NULL")},
               {placed("first_offset", "NULL")}, sink_count, {run} AS first_run_id, verdict,
               {placed("offsets", "[]::BIGINT[]")},
               {placed("positions", f"[]::{POSITION_TYPE}[]")}, {seq} AS _seq
        FROM read_parquet([{listed}])
        {entry_rows}
    """


def _newest_sql(source: str) -> str:
    cols = ", ".join(f'"{c}"' for c in LEDGER_COLUMNS)
    return (
        f"SELECT {cols} FROM {source} "
        "QUALIFY row_number() OVER (PARTITION BY message_id ORDER BY _seq DESC) = 1"
    )


def ledger_for(con: Any, entries: list[str], ids: str, name: str = "recon_ledger") -> str | None:
    """The newest entries of the messages in relation ``ids`` (a ``message_id`` column), as the
    temporary table ``name``; None when there is no ledger yet.

    Two passes, so that history costs one column: the messageIds of every entry are matched
    against the run's first (which entry holds each met message's newest entry), then whole
    entries are read only from the entries holding one, and only for those messages.
    """
    keys = entries_view(con, entries, name="recon_ledger_keys", keys_only=True)
    if keys is None:
        return None
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE recon_ledger_met AS
        SELECT message_id, max(_seq) AS _seq FROM {keys}
        WHERE message_id IN (SELECT message_id FROM {ids}) GROUP BY message_id"""
    )
    holding = {s for (s,) in con.execute("SELECT DISTINCT _seq FROM recon_ledger_met").fetchall()}
    every = entries_view(con, entries, only=holding)
    if every is None:  # no message of the run is known: an empty ledger of the same shape
        every = entries_view(con, entries)
        assert every is not None  # the keys came from these entries
        con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {_newest_sql(every)} LIMIT 0")
        return name
    met = f"(SELECT * FROM {every} WHERE message_id IN (SELECT message_id FROM recon_ledger_met))"
    con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {_newest_sql(met)}")
    return name


def full_ledger(con: Any, entries: list[str], name: str = "recon_ledger") -> str | None:
    """Every message's newest entry (sinks scanned whole, compaction).

    Most messages have one entry: only those found in several (by one narrow pass over the
    messageIds) are ranked; the others are copied as they are.
    """
    every = entries_view(con, entries)
    if every is None:
        return None
    keys = entries_view(con, entries, name="recon_ledger_keys", keys_only=True)
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE recon_ledger_repeated AS
        SELECT message_id FROM {keys} WHERE message_id IS NOT NULL
        GROUP BY message_id HAVING count(*) > 1"""
    )
    cols = ", ".join(f'"{c}"' for c in LEDGER_COLUMNS)
    repeated = "(SELECT message_id FROM recon_ledger_repeated)"
    con.execute(
        f"""CREATE OR REPLACE TEMP TABLE {name} AS
        SELECT {cols} FROM {every} WHERE message_id NOT IN {repeated} OR message_id IS NULL
        UNION ALL
        {_newest_sql(f"(SELECT * FROM {every} WHERE message_id IN {repeated})")}"""
    )
    return name


def _write_entry(con: Any, query: str, directory: str, seq: int) -> None:
    os.makedirs(directory, exist_ok=False)
    cols = ", ".join(f'"{c}"' for c in LEDGER_COLUMNS)
    target = os.path.join(directory, "part-00000.parquet").replace("'", "''")
    con.execute(
        f"COPY (SELECT {cols}, NULL::BIGINT AS id_hash, {int(seq)}::INTEGER AS entry_seq "
        f"FROM ({query})) TO '{target}' (FORMAT parquet, COMPRESSION lz4, "
        # ids are unique: a dictionary of them would be built only to be dropped
        "DICTIONARY_SIZE_LIMIT 1)"
    )
    open(os.path.join(directory, "_SUCCESS"), "w").close()


def _write_manifest(path: str, entries: list[str]) -> None:
    os.makedirs(path, exist_ok=False)
    with open(os.path.join(path, "part-00000.json"), "w", encoding="utf-8") as fh:
        for seq, entry, results_of in manifest_rows(entries):
            row = {"seq": seq, "entry": entry, "results_of": results_of}
            fh.write(json.dumps({k: v for k, v in row.items() if v is not None}) + "\n")
    open(os.path.join(path, "_SUCCESS"), "w").close()


def write_version(
    con: Any,
    ledger_dir: str,
    name: str,
    base: list[str],
    delta: str | None,
    results: tuple[str, str] | None = None,
) -> tuple[str, str | None]:
    """Write a run's entries and the manifest of the version they make.

    :param ledger_dir: the pipeline's ledger directory.
    :param name: unique to this attempt of the run (files are never overwritten).
    :param base: the entry directories of the version the run started from.
    :param delta: a relation of ``schemas.LEDGER`` rows, or None for none.
    :param results: ``(relation, run id)``: the run's results, written once into the version as
        the entries of the messages new to the ledger (``delta`` then holds the known ones).
    :returns: the manifest's path, and the results file written into the version (if any).
    """
    root = _local(ledger_dir).rstrip("/")
    os.makedirs(root, exist_ok=True)
    entries = list(base)
    results_file = None
    if results is not None:
        relation, run_id = results
        directory = f"{root}/{name}.results"
        os.makedirs(directory, exist_ok=False)
        results_file = os.path.join(directory, "part-00000.parquet")
        target = results_file.replace("'", "''")
        con.execute(
            f"COPY {relation} TO '{target}' (FORMAT parquet, COMPRESSION lz4, "
            "DICTIONARY_SIZE_LIMIT 1)"
        )
        open(os.path.join(directory, "_SUCCESS"), "w").close()
        entries.append(results_entry(directory, run_id))
    # An empty delta (no known message met) adds no entry: compaction comes every 16 runs.
    if delta is not None and con.execute(f"SELECT count(*) FROM {delta}").fetchone()[0] > 0:
        entry = f"{root}/{name}"
        _write_entry(con, f"SELECT * FROM {delta}", entry, len(entries))
        entries.append(entry)
    if len(entries) > COMPACT_AFTER:
        compacted = f"{root}/{name}-compacted-{uuid.uuid4().hex[:8]}"
        merged = full_ledger(con, entries, name="recon_ledger_compacting")
        assert merged is not None
        _write_entry(con, f"SELECT * FROM {merged}", compacted, 0)
        entries = [compacted]
    manifest = f"{root}/{name}{MANIFEST_SUFFIX}"
    _write_manifest(manifest, entries)
    return manifest, results_file
