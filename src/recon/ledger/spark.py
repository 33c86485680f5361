"""The ledger versions of ``recon.ledger``, read and written with Spark (any Hadoop-compatible
path). Its access strategy: every stored directory on a local path that has an index beside it
(segments of either store, and the entries this store writes: each file sorted by messageId,
with the index) is looked up (``recon.ledger.spark_segments``). The rest (entries the local
store wrote, directories on other file systems, and any that let too many of the run's ids
through) are read in one scan, and a run's entries picked by a semi-join of their ``id_hash`` (a
64-bit xxhash of the messageId, stored beside each entry) against the run's hashes, broadcast:
scanned, never shuffled.

Why every entry is indexed here and not only segments: scanning one stored entry's hashes costs
Spark about 2.8 s per million rows (DuckDB 0.1 s), so a version's up to ``COMPACT_AFTER`` hot
entries were most of a Spark run's ledger time; writing an entry's index costs about 0.4 s per
million rows when it is written, once (and its files are sorted again only where Spark's plan
left them out of order: ``bench/engine_changes.md``).
"""

from __future__ import annotations

import os
import shutil
from typing import TYPE_CHECKING, Any

from recon.engines.duckdb_connection import connect
from recon.ledger import local_segments, spark_segments
from recon.ledger.versions import (
    entries_from_rows,
    is_manifest,
    local_path,
    manifest_rows,
    parse_entry,
)
from recon.rules.run import RuleEngine
from recon.run.paths import is_local
from recon.spark import checkpoint

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

#: A run with up to this many ids broadcasts their 64-bit hashes (8 bytes each, ~100 MB at most
#: as Spark's hash relation): a tenth of a run's own driver's default heap (1 GiB).
BROADCAST_MAX_IDS = 5_000_000
_MANIFEST = "seq int, entry string, results_of string, segment string"
#: Bytes per Parquet row group of an entry or segment (Spark's default, 128 MB, is one group per
#: file): a looked-up id costs reading one row group.
SEGMENT_ROW_GROUP_BYTES = 1024 * 1024


class SparkEntryStore:
    """:class:`recon.ledger.versions.EntryStore` on Spark.

    :param expected_ids: about how many ids a run has (``RunRecord.fact_bound``). Up to
        :data:`BROADCAST_MAX_IDS`, their hashes are broadcast; above, Spark shuffles both sides
        (correct, and slower as history grows).
    """

    def __init__(self, spark: SparkSession, expected_ids: int = 0) -> None:
        self.spark, self.expected_ids = spark, expected_ids

    def read_manifest(self, path: str | None) -> list[str]:
        if not path:
            return []
        if not is_manifest(path):
            return [path]
        rows = self.spark.read.schema(_MANIFEST).json(path).collect()  # <= COMPACT_AFTER rows
        return entries_from_rows(
            [(r["seq"], r["entry"], r["results_of"], r["segment"]) for r in rows]
        )

    def register(self, rules: RuleEngine, entries: list[str], ids: Any | None) -> bool:
        """Stored directories left to scan are read in one scan, not a union of one per
        directory: Spark pushes a semi-join below a union, and would then hash the run's ids
        once per directory. Each stored row carries its directory's place (``entry_seq``); a
        version written before manifests has none and is always the first."""
        from pyspark.sql import functions as F

        if not entries:
            return False
        # Read in the rules' own session, where their inputs are registered (a scratch one
        # has temporary views of its own).
        spark = getattr(rules, "spark", self.spark)
        hashes = None if ids is None else self._hashes(ids)
        parsed = dict(enumerate(map(parse_entry, entries)))
        looked_up: dict[int, DataFrame] = {}
        scan = list(parsed)
        if ids is not None:
            directories = {seq: path for seq, (path, _) in parsed.items()}
            looked_up, scan = spark_segments.lookups(spark, directories, ids)
        stored = [frame.withColumn("_seq", F.lit(s)) for s, frame in looked_up.items()
                  if parsed[s][1] is None]  # fmt: skip
        paths = [parsed[s][0] for s in scan if parsed[s][1] is None]
        if paths:
            # Directories of both layouts can meet in one version: merge their schemas.
            frame = spark.read.option("mergeSchema", len(paths) > 1).parquet(*paths)
            seq = F.coalesce("entry_seq", F.lit(0)) if "entry_seq" in frame.columns else F.lit(0)
            stored.append(self._picked(frame.withColumn("_seq", seq.cast("int")), hashes))
        results = []
        for place, (path, run_id) in parsed.items():
            if run_id is None:
                continue
            if place in looked_up:
                results.append(_as_entries(looked_up[place], run_id, place))
            elif place in scan:
                frame = _as_entries(spark.read.parquet(path), run_id, place)
                results.append(self._picked(frame, hashes))
        ledger_stored, ledger_results = _union(stored), _union(results)
        if hashes is not None:
            # The picked entries are few and the rules read them more than once: history is
            # scanned once, here.
            ledger_stored = None if ledger_stored is None else checkpoint(ledger_stored)
            ledger_results = None if ledger_results is None else checkpoint(ledger_results)
        rules.use("ledger_stored", ledger_stored)
        rules.use("ledger_results", ledger_results)
        return True

    def _hashes(self, ids: DataFrame) -> DataFrame:
        from pyspark.sql import functions as F

        hashes = (
            ids.filter(F.col("message_id").isNotNull())
            .select(F.xxhash64("message_id").alias("id_hash"))
            .distinct()
        )
        return F.broadcast(hashes) if self.expected_ids <= BROADCAST_MAX_IDS else hashes

    @staticmethod
    def _picked(frame: DataFrame, hashes: DataFrame | None) -> DataFrame:
        if hashes is None:
            return frame
        return frame.withColumn("id_hash", _id_hash(frame)).join(hashes, "id_hash", "left_semi")

    def write_entry(self, rules: RuleEngine, relation: DataFrame, directory: str, seq: int) -> None:
        """Each file sorted by messageId (no shuffle: within the partitions as they are), with
        the index on a local path, as a segment is."""
        _write_indexed(_entry_rows(relation, seq), directory, sort_files=True)

    def write_segment(
        self, rules: RuleEngine, relation: DataFrame, directory: str, seq: int
    ) -> int:
        """Sorted by messageId across its files, in small row groups, with the index on a local
        path."""
        written = _write_indexed(_entry_rows(relation, seq).orderBy("message_id"), directory)
        if written is not None:
            return written
        spark = getattr(rules, "spark", self.spark)
        return int(spark.read.parquet(directory).count())

    def write_results(self, rules: RuleEngine, relation: DataFrame, directory: str) -> str:
        """Indexed as an entry is: a run's results stand for the entries of its new messages,
        most of a hot entry's rows."""
        _write_indexed(relation, directory, sort_files=True)
        return directory

    def write_manifest(self, path: str, entries: list[str]) -> None:
        frame = self.spark.createDataFrame(manifest_rows(entries), _MANIFEST)
        frame.coalesce(1).write.mode("error").json(path)

    def is_empty(self, rules: RuleEngine, relation: DataFrame) -> bool:
        return bool(relation.isEmpty())


def _write_indexed(rows: DataFrame, directory: str, sort_files: bool = False) -> int | None:
    """Write ``rows`` in small row groups; on a local path, with the index that lets either
    store look a run's ids up in them (``recon.ledger.local_segments.write_index``: the written
    ids read back and hashed by DuckDB, which Spark's hash is not). Returns the rows indexed;
    None when not indexed.

    :param sort_files: the index needs each file sorted by messageId. Spark's plan nearly always
        leaves them so already (a run's rows come out of the sort-merge join of records and
        sink rows in messageId order), which it cannot know: they are written as they come,
        and only when the index finds a file out of order are the files sorted (within each,
        no shuffle) and written again. Sorting every time cost about 5 s of a 10M run.
    """
    _write(rows, directory)
    if not is_local(directory):
        return None
    with connect() as con:
        indexed = local_segments.write_index(con, local_path(directory))
    if indexed is not None or not sort_files:
        return indexed
    spark = rows.sparkSession
    unsorted = f"{directory.rstrip('/')}.unsorted"
    os.rename(local_path(directory), local_path(unsorted))
    _write(spark.read.parquet(unsorted).sortWithinPartitions("message_id"), directory)
    shutil.rmtree(local_path(unsorted))
    with connect() as con:
        return local_segments.write_index(con, local_path(directory))


def _write(rows: DataFrame, directory: str) -> None:
    rows.write.option("parquet.block.size", SEGMENT_ROW_GROUP_BYTES).mode("error").parquet(
        directory
    )


def _as_entries(results: DataFrame, run_id: str, place: int) -> DataFrame:
    """A run's results (``schemas.RESULT``) as ledger entries first seen in that run; the rule
    ``00_ledger_entries`` keeps the rows of ledger verdicts."""
    from pyspark.sql import functions as F

    # Results written before the ledger kept times (or committed_seen) have none.
    kept = ("record_time_ms", "sink_time_ms", "committed_seen")
    timed = [c for c in kept if c in results.columns]
    return results.select(
        "verdict", "message_id", "topic", "partition", "first_offset", "offsets", "sink_count",
        "positions", *timed, F.lit(run_id).alias("first_run_id"), F.lit(place).alias("_seq"),
    )  # fmt: skip


def _union(frames: list[DataFrame]) -> DataFrame | None:
    union = None
    for frame in frames:
        union = frame if union is None else union.unionByName(frame, allowMissingColumns=True)
    return union


def _entry_rows(relation: DataFrame, seq: int) -> DataFrame:
    """``schemas.LEDGER`` rows as an entry stores them: with their hash and manifest place."""
    from pyspark.sql import functions as F

    from recon.model import schemas

    columns = [F.col(f.name) for f in schemas.LEDGER.fields]
    return relation.select(
        *columns, F.xxhash64("message_id").alias("id_hash"), F.lit(seq).alias("entry_seq")
    )


def _id_hash(frame: DataFrame) -> Column:
    """The stored hash, or one computed where an entry has none (the local engine stores none)."""
    from pyspark.sql import functions as F

    computed = F.xxhash64("message_id")
    return F.coalesce("id_hash", computed) if "id_hash" in frame.columns else computed
