"""A class-data-sharing archive of Spark's classes, made once per installed Spark and Java, that
every Spark JVM of the product maps instead of loading and verifying those classes again.

A Spark driver loads about 14,000 classes before its first job; most of its start is spent
there. With the archive mapped, a driver that judges a small window used 7 s of CPU instead of
12 s and started in 6 s instead of 10 (two cores, 2026-11-28): every ``recon run``, every
Airflow task's spark-submit and the Spark Connect server's start gain it.

The archive is Java's dynamic CDS archive (``-XX:ArchiveClassesAtExit``), recorded by a small
Spark job that touches what a run touches (Parquet, joins, aggregates, windows, JSON). Java
checks it against the class path it was made with (the jars' sizes and times) and the JVM's
build; one that does not match is ignored, silently (its logging is turned off), and the JVM
loads its classes as it would without. Its name carries a key of the Spark jars and the Java
installation, so an upgrade of either makes a new one (``make setup``) instead of ignoring the
old one for ever. ``RECON_SPARK_CLASS_ARCHIVE=false`` turns it off.
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import time

from recon import settings
from recon.spark.classes import QUIET, archive_path


def _record_workload() -> None:
    """What a run makes Spark load: run in a driver whose JVM records its classes at exit."""
    import tempfile

    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from recon.spark import spark_session

    spark = spark_session("recon-class-archive", master="local[1]")
    with tempfile.TemporaryDirectory() as folder:
        message = F.struct(F.col("id").cast("string").alias("messageId"))
        values = spark.range(2000).select(F.col("id"), F.to_json(message).alias("v"))
        records = values.select(
            "id", F.get_json_object("v", "$.messageId").alias("message_id"),
            F.xxhash64("v").alias("h"),
        )  # fmt: skip
        records.write.parquet(os.path.join(folder, "records"))
        read = spark.read.parquet(os.path.join(folder, "records")).persist()
        sink = read.where("id % 3 <> 0").unionByName(read.where("id % 5 = 0"))
        counted = sink.groupBy("message_id").agg(F.count("*").alias("n"), F.min("id").alias("m"))
        judged = read.join(counted, "message_id", "left").select(
            "message_id", F.coalesce("n", F.lit(0)).alias("n"),
            F.row_number().over(Window.partitionBy(F.col("id") % 4).orderBy("id")).alias("r"),
        )  # fmt: skip
        judged.groupBy("n").agg(F.collect_list("r").alias("rs")).write.json(
            os.path.join(folder, "judged")
        )
        spark.sql("select explode(sequence(1, 3)) as x").count()
        read.unpersist()
    spark.stop()


def make_archive(timeout: float = 600.0) -> str | None:
    """Make the archive for the installed Spark and Java unless it exists; its path (None when
    Spark or Java is missing, or the recording failed: Spark then runs without one)."""
    path = archive_path()
    if path is None or os.path.isfile(path):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    partial = f"{path}.{os.getpid()}.partial"
    own = f"{settings.spark_java_options()} -XX:ArchiveClassesAtExit={partial} {QUIET}"
    env = {
        **os.environ,
        settings.RECON_SPARK_JAVA_OPTIONS: own,
        settings.RECON_SPARK_CLASS_ARCHIVE: "false",
        settings.RECON_SPARK_REMOTE: "",
    }
    command = [sys.executable, "-m", "recon.spark.class_archive", "--record-workload"]
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        done = None
    if done is None or done.returncode != 0 or not os.path.isfile(partial):
        if os.path.exists(partial):
            os.remove(partial)
        why = "timed out" if done is None else (done.stderr.strip().splitlines() or ["?"])[-1]
        print(f"recon: no class archive of Spark's classes was made ({why}); Spark starts "
              "without one", file=sys.stderr)  # fmt: skip
        return None
    os.replace(partial, path)
    # Archives of an earlier Spark or Java: no JVM maps them any more.
    for old in glob.glob(os.path.join(os.path.dirname(path), "*.jsa")):
        if old != path:
            os.remove(old)
    return path


def main(argv: list[str] | None = None) -> int:
    """``python -m recon.spark.class_archive``: make the archive unless it exists."""
    parser = argparse.ArgumentParser(prog="python -m recon.spark.class_archive")
    parser.add_argument("--record-workload", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.record_workload:
        _record_workload()
        return 0
    if not settings.spark_class_archive():
        return 0
    existing = archive_path()
    if existing is not None and os.path.isfile(existing):
        return 0
    started = time.monotonic()
    print("==> recording Spark's classes for the JVMs to share (once per Spark and Java)")
    made = make_archive()
    if made is not None:
        print(f"==> Spark's class archive: {made} ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
