"""The one place that says how a SparkSession is built: master, extra jars, settings."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from recon import settings

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: The storage level of every DataFrame the product caches, by its ``pyspark.StorageLevel`` name
#: (resolved at use: importing this module starts no pyspark). Deserialised, as Spark keeps a
#: local checkpoint: pyspark's MEMORY_AND_DISK is the serialised level, whose blocks that spilled
#: are read back as one buffer of the whole block: at 10M sink rows with payloads, 509 MiB per
#: block and an OutOfMemoryError in a 2 GiB driver (P6, 2026-11-26).
CACHE_LEVEL = "MEMORY_AND_DISK_DESER"

#: The JVM options of every Spark driver and executor of the product (and, after them,
#: ``settings.spark_java_options()``).
JVM_OPTIONS = "-XX:+UseParallelGC"


def persist(frame: DataFrame) -> DataFrame:
    """``frame`` persisted at :data:`CACHE_LEVEL` (the caller unpersists it)."""
    from pyspark import StorageLevel

    return frame.persist(getattr(StorageLevel, CACHE_LEVEL))


def spark_settings() -> dict[str, str]:
    """Every setting a Spark driver of the product runs with, whoever starts it (``recon run``'s
    session, spark-submit from Airflow, ``spark_apps/``): bound to loopback, no UI unless
    ``RECON_SPARK_UI=true``, credentials redacted from plans, logs and the event log."""
    java_options = f"{JVM_OPTIONS} {settings.spark_java_options()}".strip()
    return {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": settings.spark_ui(),
        "spark.sql.shuffle.partitions": settings.spark_shuffle_partitions(),
        "spark.sql.adaptive.enabled": "true",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        # Kafka SASL credentials travel as a JAAS option: keep them out of plans, logs and UI.
        "spark.redaction.regex": "(?i)secret|password|token|access[.]?key|jaas",
        "spark.sql.redaction.options.regex": "(?i)url|jaas|password|secret",
        "spark.driver.memory": settings.spark_driver_memory(),
        # The throughput collector: a run is a batch job, and G1's concurrent work competes
        # for the two cores (10M window: 137 s -> 125 s, peak memory 3.4 -> 3.3 GB; tried
        # and left: C1 only, which saved 1.6 s at 1M and cost 52 s at 10M).
        "spark.driver.extraJavaOptions": java_options,
        "spark.executor.extraJavaOptions": java_options,
    }


def spark_session(app_name: str = "recon", master: str | None = None) -> SparkSession:
    """Build (or reuse) a SparkSession with the project's jars on its classpath
    (``recon.spark_jars``: the fetched files, else Spark resolves them from Maven Central).

    :param app_name: shown in the Spark UI and logs.
    :param master: ``local[*]`` (the default, from ``RECON_SPARK_MASTER``) or ``spark://host:port``.
    """
    from pyspark.sql import SparkSession

    from recon.spark_jars import spark_jar_settings

    # The Python workers (the messageId extraction runs in them) use this process's interpreter,
    # which has the package and its dependencies, not whatever "python3" is on the PATH.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name).master(master or settings.spark_master())
    for key, value in {**spark_jar_settings(), **spark_settings()}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    _quiet_accumulator_server(session)
    return session


def _quiet_accumulator_server(session: SparkSession) -> None:
    """pyspark's accumulator server (a thread of this process) prints a traceback to stderr when
    the driver JVM dies mid-update; the run reports the lost driver in one line instead."""
    import logging

    server = getattr(session.sparkContext, "_accumulatorServer", None)
    if server is None:
        return

    def handle_error(_request: object, client_address: object) -> None:
        logging.getLogger(__name__).debug(
            "accumulator update from %s failed (the driver went away)", client_address,
            exc_info=True,
        )  # fmt: skip

    server.handle_error = handle_error
