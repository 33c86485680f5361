"""The Spark store's lookups in ledger segments and entries (``recon.ledger.spark``), through the
index both stores write beside a segment, and the Spark store beside each entry too
(``recon.ledger.local_segments``).

The filters are keyed by DuckDB's ``hash``, which Spark does not compute, so the run's ids are
probed where they are, in the executors: an Arrow map over the ids (``mapInArrow``; no row at a
time) hashes each batch with DuckDB and keeps the ids some segment's filter lets through, with
that segment's place. Those are few (the run's true cold facts and about 4 in 100,000 others)
and come to the driver, which reads their rows from the row groups that hold them. One pass over
the run's ids instead of a scan of every segment's hashes.

An executor that cannot use a filter the driver could (no such file where it runs, or a DuckDB
that hashes differently) says so with one row of place -1: the driver then scans every segment,
correct and slower, rather than miss a fact.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from recon.engines.duckdb_connection import connect
from recon.ledger import local_segments
from recon.ledger.versions import local_path
from recon.run.paths import is_local

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_FOUND = "seq int, message_id string"
_CANNOT = -1


def lookups(
    spark: SparkSession, segments: dict[int, str], ids: DataFrame
) -> tuple[dict[int, DataFrame], list[int]]:
    """The rows of the directories (segments, entries and results, by manifest place) that may
    be entries of the run's ids, a frame per directory that holds any, and the places of the
    directories to scan instead (without an index, on a path that is not local, or too many ids
    let through)."""
    from pyspark.sql import functions as F

    with connect() as con:
        check = local_segments.hash_check(con)
    usable = {}
    scan = []
    for seq, directory in segments.items():
        path = local_path(directory)
        if is_local(directory) and local_segments.usable(path, check) is not None:
            usable[seq] = path
        else:
            scan.append(seq)
    if not usable:
        return {}, scan
    found = (
        ids.select("message_id")
        .where(F.col("message_id").isNotNull())
        .mapInArrow(_prober(usable, check), _FOUND)
    )
    cap = local_segments.LOOKUP_MAX * len(usable) + 1
    rows = found.limit(cap).collect()  # at most LOOKUP_MAX per segment (else it is scanned)
    if len(rows) >= cap or any(r["seq"] == _CANNOT for r in rows):
        return {}, sorted(scan + list(usable))
    values: dict[int, set[str]] = {}
    for r in rows:
        values.setdefault(int(r["seq"]), set()).add(r["message_id"])
    frames = {}
    for seq, path in usable.items():
        wanted = values.get(seq, set())
        if len(wanted) > local_segments.LOOKUP_MAX:
            scan.append(seq)
            continue
        table = local_segments.read_rows(path, sorted(wanted)) if wanted else None
        if table is not None:
            frames[seq] = spark.createDataFrame(table)
    return frames, sorted(scan)


def _prober(segments: dict[int, str], check: int) -> Callable[[Iterable[Any]], Iterable[Any]]:
    """What each executor runs over its batches of the run's ids."""

    def probe(batches: Iterable[Any]) -> Iterable[Any]:
        import numpy as np
        import pyarrow as pa

        from recon.ledger import membership

        con = connect()
        filters = {seq: local_segments.usable(d, check) for seq, d in segments.items()}
        if local_segments.hash_check(con) != check or any(f is None for f in filters.values()):
            yield pa.RecordBatch.from_pydict(
                {"seq": [_CANNOT], "message_id": [None]},
                schema=pa.schema([("seq", pa.int32()), ("message_id", pa.string())]),
            )
            return
        for batch in batches:
            con.register("recon_ids", batch)
            ids = con.execute(
                "SELECT message_id, hash(message_id) AS h FROM recon_ids"
            ).to_arrow_table()
            con.unregister("recon_ids")
            probe = membership.Probe(ids.column("h").to_numpy(), keep_order=True)
            assert probe.order is not None
            for seq, found in filters.items():
                assert found is not None
                where = probe.order[found.might_contain(probe)]
                if len(where):
                    picked = ids.column("message_id").take(pa.array(np.sort(where)))
                    picked = picked.combine_chunks()
                    yield pa.RecordBatch.from_pydict(
                        {"seq": pa.array([seq] * len(picked), pa.int32()), "message_id": picked}
                    )

    return probe
