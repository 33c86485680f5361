"""An upstream topic's records as the rules' input ``source_rows`` (issue 20), read by the Spark
engine: the same statement as DuckDB's (``tests/unit/test_source_topic_rows.py``), the same rows.
Here, not in the unit tier, because it needs a JVM."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fixtures.source_topic_records import EXPECTED, RECORDS, SNAPSHOT, TIMES, ordered

from recon.read.source_topic import source_rows_sql
from recon.rules.render import for_dialect

pytestmark = pytest.mark.integration


def test_spark_reads_and_judges_by_kafka_timestamp(spark: Any) -> None:
    from pyspark.sql.types import StructType

    from recon.model import schemas

    # The window's columns the statement reads, as the readers type them.
    used = ("message_id", "topic", "partition", "offset", "timestamp")
    schema = StructType([schemas.WINDOW[name] for name in used])
    rows = [(m, "up", p, o, SNAPSHOT - timedelta(minutes=n)) for m, p, o, n in RECORDS]
    spark.createDataFrame(rows, schema).createOrReplaceTempView("records")
    got = [tuple(r) for r in spark.sql(for_dialect(source_rows_sql("records", TIMES), "spark"))
           .collect()]  # fmt: skip
    assert ordered(got) == EXPECTED
