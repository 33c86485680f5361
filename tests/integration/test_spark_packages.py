"""Spark's extra jars without ``make setup`` (an installed wheel: issue 22): with no jar in
``$RECON_JARS_SPARK``, a driver asks Spark to resolve the pom's coordinates from Maven Central
(``recon.spark.jars``), and reads Kafka through the Kafka source and PostgreSQL through the JDBC
driver it got that way. Its own process: the test session's driver has the fetched files."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Producer

pytestmark = pytest.mark.integration

DRIVER = r"""
import sys
from recon.config.connections import postgres_connection
from recon.read.sink import jdbc_read_properties
from recon.spark import spark_session

bootstrap, topic = sys.argv[1:3]
spark = spark_session("recon-packages-check")
print("packages", spark.conf.get("spark.jars.packages"))
records = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
           .option("subscribe", topic).load())
print("records", records.count())
conn = postgres_connection("postgres_sink")
rows = spark.read.jdbc(conn.jdbc_url, "(SELECT 1 AS one UNION ALL SELECT 2) q",
                       properties=jdbc_read_properties(conn))
print("rows", rows.count())
spark.stop()
"""


def test_a_driver_without_fetched_jars_resolves_them_and_reads_kafka_and_postgres(
    tmp_path: Path, kafka_config: dict[str, str], new_topic: Callable[..., str]
) -> None:
    from recon import settings
    from recon.spark.jars import spark_coordinates

    topic = new_topic("packages")
    producer = Producer(kafka_config)
    for i in range(3):
        producer.produce(topic, value=f'{{"id": "m{i}"}}'.encode())
    assert producer.flush(30) == 0
    empty = tmp_path / "no-jars"
    empty.mkdir()
    # The Ivy cache stays in the project's state folder: Maven Central is asked once per clone.
    env = {**os.environ, settings.RECON_JARS_SPARK: str(empty)}
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, kafka_config["bootstrap.servers"], topic],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    said = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert said["packages"] == ",".join(spark_coordinates())
    assert (said["records"], said["rows"]) == ("3", "2")
