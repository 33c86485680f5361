"""The ledger versions of ``recon.ledger`` (the layout is described there), read and written
with Spark: :func:`ledger_for` reads a version for a run, entries picked by a semi-join on their
``id_hash`` against the run's broadcast hashes; the run's writes go under new paths.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

MANIFEST_SUFFIX = ".manifest"
RESULTS_ENTRY = "results-of:"
COMPACT_AFTER = 16
#: A run with up to this many ids broadcasts their 64-bit hashes (8 bytes each, ~100 MB at most
#: as Spark's hash relation): the driver's default 2 GiB holds that.
BROADCAST_MAX_IDS = 5_000_000


def _is_manifest(path: str) -> bool:
    return path.rstrip("/").endswith(MANIFEST_SUFFIX)


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


def read_manifest(spark: SparkSession, path: str | None) -> list[str]:
    """The entries of a ledger version, oldest first (none for no version)."""
    if not path:
        return []
    if not _is_manifest(path):
        return [path]
    rows = (
        spark.read.schema("seq int, entry string, results_of string").json(path).collect()
    )  # <= COMPACT_AFTER rows
    return [
        entry_from_row(r["entry"], r["results_of"]) for r in sorted(rows, key=lambda r: r["seq"])
    ]


def _write_manifest(spark: SparkSession, path: str, entries: list[str]) -> None:
    frame = spark.createDataFrame(
        manifest_rows(entries), "seq int, entry string, results_of string"
    )
    frame.coalesce(1).write.mode("errorifexists").json(path)


def results_as_entries(results: DataFrame, run_id: str, seq: int) -> DataFrame:
    """A run's result rows as the ledger entries of their messages (those of ledger verdicts):
    what ``recon/rules/08_ledger_*.sql`` makes of them for messages new to the ledger."""
    from pyspark.sql import functions as F

    from recon import schemas
    from recon.verdicts import LEDGER_VERDICTS, UNMATCHED

    unmatched = F.col("verdict").isin(*UNMATCHED)

    def placed(name: str, empty: Any = None) -> Any:
        return F.when(unmatched, empty).otherwise(F.col(name)).alias(name)

    entries = results.filter(
        F.col("message_id").isNotNull() & F.col("verdict").isin(*LEDGER_VERDICTS)
    ).select(
        "message_id",
        placed("topic", F.lit(None).cast("string")),
        placed("partition", F.lit(None).cast("int")),
        placed("first_offset", F.lit(None).cast("bigint")),
        placed("offsets", F.array().cast("array<bigint>")),
        "sink_count",
        F.lit(run_id).alias("first_run_id"),
        "verdict",
        placed("positions", F.array().cast(schemas.POSITIONS)),
    )
    entries = entries.withColumn("id_hash", F.xxhash64("message_id")).withColumn("_seq", F.lit(seq))
    return conform_ledger(entries, keep=("id_hash", "_seq"))


def entries_frame(spark: SparkSession, entries: list[str]) -> DataFrame | None:
    """Every entry of every directory, with its directory's place in the manifest (``_seq``).

    One scan over all directories, not a union of one per directory: Spark pushes a semi-join
    below a union, and would then hash the run's ids once per directory. Each row carries its
    directory's place (``entry_seq``, written by :func:`write_version`); a version written before
    manifests has none and is always the first.
    """
    from pyspark.sql import functions as F

    if not entries:
        return None
    directories = [e for e in entries if parse_entry(e)[1] is None]
    frames = []
    if directories:
        # Directories of both layouts can meet in one version: merge their schemas.
        frame = spark.read.option("mergeSchema", len(directories) > 1).parquet(*directories)
        fallback = F.xxhash64("message_id")
        id_hash = F.coalesce("id_hash", fallback) if "id_hash" in frame.columns else fallback
        seq = F.coalesce("entry_seq", F.lit(0)) if "entry_seq" in frame.columns else F.lit(0)
        frame = frame.withColumn("id_hash", id_hash).withColumn("_seq", seq)
        frames.append(conform_ledger(frame, keep=("id_hash", "_seq")))
    for place, entry in enumerate(entries):
        path, run_id = parse_entry(entry)
        if run_id is not None:
            frames.append(results_as_entries(spark.read.parquet(path), run_id, place))
    stacked = frames[0]
    for more in frames[1:]:
        stacked = stacked.unionByName(more)
    return stacked


def _newest(entries: DataFrame) -> DataFrame:
    """One entry per messageId: the one from the newest directory."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    newest_first = Window.partitionBy("message_id").orderBy(F.col("_seq").desc())
    return (
        entries.withColumn("_rank", F.row_number().over(newest_first))
        .filter(F.col("_rank") == 1)
        .drop("_rank", "_seq")
    )


def ledger_for(
    spark: SparkSession, entries: list[str], facts: Sequence[DataFrame], expected_ids: int = 0
) -> DataFrame | None:
    """The ledger entries of the messages a run sees (``None`` when there is no ledger yet).

    :param entries: the base version's entry directories (:func:`read_manifest`).
    :param facts: the run's records and sink rows (any frames with a ``message_id`` column).
    :param expected_ids: about how many ids the run has (``RunRecord.fact_bound``). Up to
        :data:`BROADCAST_MAX_IDS`, their hashes are broadcast and history is only scanned;
        above, Spark shuffles both sides (correct, and slower as history grows).
    """
    from pyspark.sql import functions as F

    stacked = entries_frame(spark, entries)
    if stacked is None or not facts:
        return None
    ids = facts[0].select("message_id")
    for frame in facts[1:]:
        ids = ids.unionByName(frame.select("message_id"))
    hashes = (
        ids.filter(F.col("message_id").isNotNull())
        .select(F.xxhash64("message_id").alias("id_hash"))
        .distinct()
    )
    if expected_ids <= BROADCAST_MAX_IDS:
        hashes = F.broadcast(hashes)
    return _newest(stacked.join(hashes, "id_hash", "left_semi")).drop("id_hash")


def full_ledger(spark: SparkSession, entries: list[str]) -> DataFrame | None:
    """Every message's newest entry: for sinks scanned whole, and for compaction."""
    stacked = entries_frame(spark, entries)
    return None if stacked is None else _newest(stacked).drop("id_hash")


def _stamped(entries: DataFrame, seq: int) -> DataFrame:
    """Entries as stored: with the hash readers select by, and the directory's manifest place."""
    from pyspark.sql import functions as F

    return entries.withColumn("id_hash", F.xxhash64("message_id")).withColumn(
        "entry_seq", F.lit(seq)
    )


def write_version(
    spark: SparkSession, ledger_dir: str, name: str, base: list[str], delta: DataFrame
) -> str:
    """Write a run's entries and the manifest of the version they make; returns its path.

    :param ledger_dir: the pipeline's ledger directory.
    :param name: a name unique to this attempt of the run (files are never overwritten).
    :param base: the entry directories of the version the run started from.
    :param delta: ``schemas.LEDGER`` rows for the messages the run touched.
    """
    root = ledger_dir.rstrip("/")
    entry = f"{root}/{name}"
    _stamped(delta, len(base)).write.mode("errorifexists").parquet(entry)
    entries = [*base, entry]
    if len(entries) > COMPACT_AFTER:
        compacted = f"{root}/{name}-compacted-{uuid.uuid4().hex[:8]}"
        merged = full_ledger(spark, entries)
        assert merged is not None
        _stamped(merged, 0).write.mode("errorifexists").parquet(compacted)
        entries = [compacted]
    manifest = f"{root}/{name}{MANIFEST_SUFFIX}"
    _write_manifest(spark, manifest, entries)
    return manifest


def _conform(df: DataFrame, schema: Any, name: str, keep: Sequence[str] = ()) -> DataFrame:
    """Select the schema's columns with its types (and the ``keep`` columns as they are); other
    columns are dropped."""
    from pyspark.sql import functions as F

    from recon.errors import InputSchemaError

    missing = [f.name for f in schema.fields if f.name not in df.columns]
    if missing:
        raise InputSchemaError(
            f"{name}: missing column(s) {', '.join(missing)} (expected {schema.simpleString()})"
        )
    typed = [F.col(f.name).cast(f.dataType).alias(f.name) for f in schema.fields]
    return df.select(*typed, *keep)


def conform_ledger(ledger: DataFrame, keep: Sequence[str] = ()) -> DataFrame:
    """The ledger as ``schemas.LEDGER`` (plus the ``keep`` columns), with ``positions`` derived
    from topic/partition/offsets when not stored.

    :raises InputSchemaError: when a column is missing.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, LongType

    from recon import schemas

    missing = [
        c for c in ("offsets", "first_offset", "topic", "partition") if c not in ledger.columns
    ]
    if missing:
        return _conform(ledger, schemas.LEDGER, "ledger", keep)  # raises, naming them
    # An entry of a message at one position may store no lists (the local engine writes its
    # entries so): they follow from first_offset.
    offsets = F.coalesce(
        F.col("offsets").cast(ArrayType(LongType())),
        F.when(F.col("first_offset").isNull(), F.array().cast(ArrayType(LongType()))).otherwise(
            F.array(F.col("first_offset").cast(LongType()))
        ),
    )
    derived = F.transform(
        offsets,
        lambda o: F.struct(
            F.col("topic").alias("topic"),
            F.col("partition").alias("partition"),
            o.alias("offset"),
        ),
    ).cast(schemas.POSITIONS)
    positions = (
        F.coalesce(F.col("positions").cast(schemas.POSITIONS), derived)
        if "positions" in ledger.columns
        else derived
    )
    ledger = ledger.withColumn("offsets", offsets).withColumn("positions", positions)
    return _conform(ledger, schemas.LEDGER, "ledger", keep)
