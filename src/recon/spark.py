"""The one place that says how a SparkSession is built: master, extra jars, settings."""

from __future__ import annotations

import glob
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def spark_extra_jars() -> list[str]:
    """The Kafka source and JDBC driver jars fetched by ``make setup`` (``.state/jars/spark``)."""
    jar_dir = os.environ.get("RECON_JARS_SPARK") or os.path.join(_state_dir(), "jars", "spark")
    return sorted(glob.glob(os.path.join(jar_dir, "*.jar")))


def _state_dir() -> str:
    root = os.environ.get("RECON_ROOT") or os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    )
    return os.environ.get("RECON_STATE") or os.path.join(root, ".state")


def spark_session(app_name: str = "recon", master: str | None = None) -> SparkSession:
    """Build (or reuse) a SparkSession with the project's jars on its classpath.

    :param app_name: shown in the Spark UI and logs.
    :param master: ``local[*]`` (the default, from ``RECON_SPARK_MASTER``) or ``spark://host:port``.
    """
    from pyspark.sql import SparkSession

    jars = spark_extra_jars()
    if not jars:
        raise RuntimeError(
            "Spark's extra jars (Kafka source, PostgreSQL JDBC) are missing: run 'make setup'"
        )
    builder = (
        SparkSession.builder.appName(app_name)
        .master(master or os.environ.get("RECON_SPARK_MASTER", "local[*]"))
        .config("spark.jars", ",".join(jars))
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", os.environ.get("RECON_SPARK_UI", "false"))
        .config(
            "spark.sql.shuffle.partitions", os.environ.get("RECON_SPARK_SHUFFLE_PARTITIONS", "8")
        )
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        # Kafka SASL credentials travel as a JAAS option: keep them out of plans, logs and the UI.
        .config("spark.redaction.regex", "(?i)secret|password|token|access[.]?key|jaas")
        .config("spark.sql.redaction.options.regex", "(?i)url|jaas|password|secret")
        .config("spark.driver.memory", os.environ.get("RECON_SPARK_DRIVER_MEMORY", "2g"))
    )
    return builder.getOrCreate()
