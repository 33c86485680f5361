"""The ledger versions of ``recon.ledger``, read and written with Spark (any Hadoop-compatible
path). Its access strategy: the hot entry directories (and segments it cannot look up in) are
read in one scan, and a run's entries are picked by a semi-join of their ``id_hash`` (a 64-bit
xxhash of the messageId, stored beside each entry) against the run's hashes, broadcast: scanned,
never shuffled. Segments on local paths are looked up through the index beside them instead
(``recon.ledger.spark_segments``), whichever store wrote them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from recon.duckdb_connection import connect
from recon.ledger import local_segments, spark_segments
from recon.ledger.versions import (
    entries_from_rows,
    is_manifest,
    local_path,
    manifest_rows,
    parse_entry,
    segment_of,
)
from recon.paths import is_local
from recon.rules.run import RuleEngine

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

#: A run with up to this many ids broadcasts their 64-bit hashes (8 bytes each, ~100 MB at most
#: as Spark's hash relation): the driver's default 2 GiB holds that.
BROADCAST_MAX_IDS = 5_000_000
_MANIFEST = "seq int, entry string, results_of string, segment string"
#: Bytes per Parquet row group of a segment (Spark's default, 128 MB, is one group per file): a
#: looked-up id costs reading one row group.
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
        """Stored directories are read in one scan, not a union of one per directory: Spark
        pushes a semi-join below a union, and would then hash the run's ids once per directory.
        Each stored row carries its directory's place (``entry_seq``); a version written before
        manifests has none and is always the first."""
        from pyspark.sql import functions as F

        if not entries:
            return False
        # Read in the rules' own session, where their inputs are registered (a scratch one
        # has temporary views of its own).
        spark = getattr(rules, "spark", self.spark)
        hashes = None if ids is None else self._hashes(ids)
        directories = {seq: path for seq, (path, run_id) in enumerate(map(parse_entry, entries))
                       if run_id is None}  # fmt: skip
        looked_up = None
        segments = {s: p for s, p in directories.items() if segment_of(entries[s]) is not None}
        if ids is not None and segments:
            looked_up, scan = spark_segments.lookups(spark, segments, ids)
            directories = {s: p for s, p in directories.items() if s not in segments or s in scan}
        stored = None
        if directories:
            # Directories of both layouts can meet in one version: merge their schemas.
            paths = list(directories.values())
            frame = spark.read.option("mergeSchema", len(paths) > 1).parquet(*paths)
            seq = F.coalesce("entry_seq", F.lit(0)) if "entry_seq" in frame.columns else F.lit(0)
            stored = self._picked(frame.withColumn("_seq", seq.cast("int")), hashes)
        if looked_up is not None:
            stored = (
                looked_up
                if stored is None
                else stored.unionByName(looked_up, allowMissingColumns=True)
            )
        results = None
        for place, entry in enumerate(entries):
            path, run_id = parse_entry(entry)
            if run_id is None:
                continue
            frame = spark.read.parquet(path)
            # Results written before the ledger kept times have none.
            timed = [c for c in ("record_time_ms", "sink_time_ms") if c in frame.columns]
            frame = frame.select(
                "verdict", "message_id", "topic", "partition", "first_offset", "offsets",
                "sink_count", "positions", *timed, F.lit(run_id).alias("first_run_id"),
                F.lit(place).alias("_seq"),
            )  # fmt: skip
            frame = self._picked(frame, hashes)
            results = (
                frame if results is None else results.unionByName(frame, allowMissingColumns=True)
            )
        if hashes is not None:
            # The picked entries are few and the rules read them more than once: history is
            # scanned once, here.
            stored = None if stored is None else stored.localCheckpoint(eager=True)
            results = None if results is None else results.localCheckpoint(eager=True)
        rules.use("ledger_stored", stored)
        rules.use("ledger_results", results)
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
        _entry_rows(relation, seq).write.mode("error").parquet(directory)

    def write_segment(
        self, rules: RuleEngine, relation: DataFrame, directory: str, seq: int
    ) -> int:
        """Sorted by messageId, in small row groups; on a local path, with the index that lets
        either store look a run's ids up in it (``recon.ledger.local_segments.write_index``:
        DuckDB reads the written ids back; Spark does not compute the filter's hash)."""
        rows = _entry_rows(relation, seq).orderBy("message_id")
        rows.write.option("parquet.block.size", SEGMENT_ROW_GROUP_BYTES).mode("error").parquet(
            directory
        )
        if is_local(directory):
            with connect() as con:
                written = local_segments.write_index(con, local_path(directory))
            if written is not None:
                return written
        spark = getattr(rules, "spark", self.spark)
        return int(spark.read.parquet(directory).count())

    def write_results(self, rules: RuleEngine, relation: DataFrame, directory: str) -> str:
        relation.write.mode("error").parquet(directory)
        return directory

    def write_manifest(self, path: str, entries: list[str]) -> None:
        frame = self.spark.createDataFrame(manifest_rows(entries), _MANIFEST)
        frame.coalesce(1).write.mode("error").json(path)

    def is_empty(self, rules: RuleEngine, relation: DataFrame) -> bool:
        return bool(relation.isEmpty())


def _entry_rows(relation: DataFrame, seq: int) -> DataFrame:
    """``schemas.LEDGER`` rows as an entry stores them: with their hash and manifest place."""
    from pyspark.sql import functions as F

    from recon import schemas

    columns = [F.col(f.name) for f in schemas.LEDGER.fields]
    return relation.select(
        *columns, F.xxhash64("message_id").alias("id_hash"), F.lit(seq).alias("entry_seq")
    )


def _id_hash(frame: DataFrame) -> Column:
    """The stored hash, or one computed where an entry has none (the local engine stores none)."""
    from pyspark.sql import functions as F

    computed = F.xxhash64("message_id")
    return F.coalesce("id_hash", computed) if "id_hash" in frame.columns else computed
