"""Ledger segments as the local store writes and reads them (``recon.ledger.local``).

A segment is Parquet sorted by messageId (one file, in row groups of :data:`SEGMENT_ROW_GROUP`
rows, as written here; the Spark store's are several files, each sorted), with an index beside
it (named as Hadoop hides files, so that Spark reads the directory as Parquet): the membership
filter of its ids (``recon.ledger.membership``, keyed by DuckDB's ``hash``) and its *fences*,
per file the first messageId of each row group and the last of the file. Both stores write the
index with :func:`write_index` (Arrow reads the ids back from the files, DuckDB hashes them); the
Spark store writes it beside its entries and results too.

A run's entries in a segment are found in three steps: its ids' hashes are probed against the
filter; the ids it lets through (the run's true cold facts, and about 4 in 100,000 others) are
placed in row groups by the fences; those row groups alone are read (Apache Arrow reads row
groups by number) and their rows of those ids kept. DuckDB itself cannot be told which row
groups to read: it prunes them for one value, not for a list of them (a list of 135 values
read all 16M rows of a segment, 0.33 s, where one value read one row group, 0.02 s).
"""

from __future__ import annotations

import bisect
import glob
import json
import os
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from recon.ledger import membership
from recon.rules.render import literal

#: Rows per Parquet row group of a segment: a looked-up id costs reading about this many.
SEGMENT_ROW_GROUP = 16_384
#: A segment whose filter lets through more of a run's ids than this is scanned instead, one
#: column wide: reading a row group per id would cost more.
LOOKUP_MAX = 2_048
#: The run's ids are probed this many at a time: a probe holds ~56 bytes per id.
PROBE_BATCH = 1_000_000
FENCES = "_fences.json"
DATA_FILE = "part-00000.parquet"  # the file a segment written here has


def copy_parquet(con: Any, query: str, target: str, options: str = "") -> None:
    """``query``'s rows as a Parquet file (lz4; no dictionary: ids are unique, a dictionary of
    them would be built only to be dropped)."""
    extra = f", {options}" if options else ""
    con.execute(
        f"COPY ({query}) TO {literal(target)} "
        f"(FORMAT parquet, COMPRESSION lz4, DICTIONARY_SIZE_LIMIT 1{extra})"
    )


def hash_check(con: Any) -> int:
    """DuckDB's hash of ``membership.CHECK_TEXT``: a filter stored under another is not used."""
    return int(con.execute("SELECT hash(?)", [membership.CHECK_TEXT]).fetchone()[0])


def write(con: Any, query: str, directory: str) -> int:
    """``query``'s rows (the entry columns) as a segment in ``directory`` (which exists, empty);
    returns how many."""
    target = os.path.join(directory, DATA_FILE)
    copy_parquet(con, f"{query} ORDER BY message_id", target, f"ROW_GROUP_SIZE {SEGMENT_ROW_GROUP}")
    rows = write_index(con, directory)
    if rows is None:  # not sorted after all (ids of one message twice): kept, to be scanned
        rows = con.execute(f"SELECT count(*) FROM read_parquet({literal(target)})").fetchone()[0]
    return int(rows)


def write_index(con: Any, directory: str) -> int | None:
    """Write the filter and fences of the directory of Parquet files (a segment, or a Spark
    entry or results file; each file sorted by messageId: the Spark store writes several);
    returns its rows. None, and no index,
    when a file is not sorted: the segment is then scanned. The ids are read once: each row
    group gives its fence and its ids' hashes."""
    files = sorted(glob.glob(os.path.join(directory, "*.parquet")))
    rows = int(sum(pq.ParquetFile(f).metadata.num_rows for f in files))
    fences: list[list[Any]] = []
    try:
        found = membership.build(_hashed(con, files, fences), rows)
    except _Unsorted:
        return None
    with open(os.path.join(directory, FENCES), "w", encoding="utf-8") as fh:
        json.dump({"files": fences}, fh)
    membership.write(directory, found, hash_check(con))  # last: a segment is usable once it is
    return rows


class _Unsorted(Exception):
    pass


def _hashed(con: Any, files: list[str], fences: list[list[Any]]) -> Iterator[np.ndarray]:
    """The hashes of the files' ids, about a million at a time, while ``fences`` gets each
    file's ``[name, first messageId of each row group, last messageId]``; raises
    :class:`_Unsorted` at a file whose ids are not sorted."""
    pending: list[pa.Array] = []
    held = 0
    for path in files:
        data = pq.ParquetFile(path)
        first: list[str] = []
        last = None
        for group in range(data.num_row_groups):
            ids = data.read_row_group(group, columns=["message_id"]).column(0).combine_chunks()
            # A run's results hold rows without a messageId (invalid records): in no lookup.
            ids = pc.drop_null(ids)
            if not len(ids):
                continue
            if len(ids) > 1 and not pc.all(pc.less(ids[:-1], ids[1:])).as_py():
                raise _Unsorted(path)
            if last is not None and ids[0].as_py() <= last:
                raise _Unsorted(path)
            first.append(ids[0].as_py())
            last = ids[len(ids) - 1].as_py()
            pending.append(ids)
            held += len(ids)
            if held >= PROBE_BATCH:
                yield _hashes(con, pending)
                pending, held = [], 0
        fences.append([os.path.basename(path), first, last])
    if pending:
        yield _hashes(con, pending)


def _hashes(con: Any, ids: list[pa.Array]) -> np.ndarray:
    con.register("recon_index_ids", pa.table({"message_id": pa.chunked_array(ids)}))
    try:
        found = con.execute("SELECT hash(message_id) AS h FROM recon_index_ids").fetchnumpy()
        return np.asarray(found["h"], dtype=np.uint64)
    finally:
        con.unregister("recon_index_ids")


def _read_fences(directory: str) -> list[list[Any]] | None:
    try:
        with open(os.path.join(directory, FENCES), encoding="utf-8") as fh:
            fences = json.load(fh)
    except (OSError, ValueError):
        return None
    return fences["files"] if isinstance(fences, dict) and "files" in fences else None


def usable(directory: str, check: int) -> membership.MembershipFilter | None:
    """The segment's filter, when it has one and fences this reader can use (``check``:
    :func:`hash_check`); None: the segment is to be scanned."""
    found = membership.read(directory, check)
    return found if found is not None and _read_fences(directory) is not None else None


def lookups(con: Any, segments: dict[int, str], ids: str) -> tuple[dict[int, str], list[int]]:
    """Which rows of each segment (by manifest place: its directory) may be entries of the
    run's ids (relation ``ids``): a temporary table of them per segment that holds any, and
    the places of the segments to scan instead (no filter or fences this store can use, or too
    many ids let through)."""
    check = hash_check(con)
    filters = {seq: usable(directory, check) for seq, directory in segments.items()}
    scan = [seq for seq, found in filters.items() if found is None]
    passed: dict[int, list[np.ndarray]] = {seq: [] for seq in filters if seq not in scan}
    if passed:
        batches = con.execute(
            f"SELECT hash(message_id) AS h FROM {ids} WHERE message_id IS NOT NULL"
        ).fetch_record_batch(PROBE_BATCH)
        for batch in batches:
            probe = membership.Probe(batch.column(0).to_numpy())
            for seq, hashes in passed.items():
                found = filters[seq]
                assert found is not None
                hashes.append(probe.hashes[found.might_contain(probe)])
    through: dict[int, np.ndarray] = {}
    for seq, hashes in passed.items():
        maybe = np.unique(np.concatenate(hashes)) if hashes else np.array([], np.uint64)
        if len(maybe) > LOOKUP_MAX:
            scan.append(seq)
        elif len(maybe):
            through[seq] = maybe
    tables: dict[int, str] = {}
    if not through:
        return tables, scan
    by_hash = _ids_of(con, ids, np.unique(np.concatenate(list(through.values()))))
    for seq, maybe in through.items():
        values = sorted({m for h in maybe.tolist() for m in by_hash.get(int(h), ())})
        rows = read_rows(segments[seq], values) if values else None
        if rows is not None:
            table = f"recon_ledger_segment_{seq}"
            con.register("recon_ledger_rows", rows)
            try:
                con.execute(
                    f"CREATE OR REPLACE TEMP TABLE {table} AS SELECT * FROM recon_ledger_rows"
                )
            finally:
                con.unregister("recon_ledger_rows")
            tables[seq] = table
    return tables, scan


def _ids_of(con: Any, ids: str, hashes: np.ndarray) -> dict[int, list[str]]:
    """The run's ids with these hashes, by hash."""
    con.register("recon_ledger_probe", pa.table({"h": hashes}))
    try:
        found = con.execute(
            f"SELECT DISTINCT message_id, hash(message_id) AS h FROM {ids} "
            "WHERE hash(message_id) IN (SELECT h FROM recon_ledger_probe)"
        ).fetchall()
    finally:
        con.unregister("recon_ledger_probe")
    by_hash: dict[int, list[str]] = {}
    for message_id, h in found:
        by_hash.setdefault(int(h), []).append(message_id)
    return by_hash


def read_rows(directory: str, values: list[str]) -> pa.Table | None:
    """The segment's rows of ``values`` (sorted), reading only the row groups whose fences hold
    them; None when it has none."""
    fences = _read_fences(directory)
    assert fences is not None  # checked by usable()
    wanted = pa.array(values, pa.string())
    tables = []
    for name, first, last in fences:
        groups = sorted(
            {bisect.bisect_right(first, v) - 1 for v in values if first and first[0] <= v <= last}
        )
        if groups:
            rows = pq.ParquetFile(os.path.join(directory, name)).read_row_groups(groups)
            tables.append(rows.filter(pc.is_in(rows["message_id"], value_set=wanted)))
    rows = pa.concat_tables(tables, promote_options="permissive") if tables else None
    return rows if rows is not None and rows.num_rows else None
