"""An upstream topic's records as the rules' input ``source_rows`` (issue 20): which records a
run reads by their Kafka timestamp, which of them it judges, and how each is named, with DuckDB
(the same statement on Spark: ``tests/integration/test_source_topic_rows_on_spark.py``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fixtures.source_topic_records import EXPECTED, RECORDS, SNAPSHOT, TIMES, ordered

from recon.read.source import SourceTimes
from recon.read.source_topic import source_rows_sql

pytestmark = pytest.mark.unit


def _duckdb_rows(times: SourceTimes) -> list[tuple[Any, ...]]:
    import duckdb

    con = duckdb.connect()
    con.execute(
        'CREATE TABLE records (message_id VARCHAR, topic VARCHAR, "partition" INTEGER, '
        '"offset" BIGINT, "timestamp" TIMESTAMPTZ)'
    )
    for mid, partition, offset, minutes in RECORDS:
        at = SNAPSHOT - timedelta(minutes=minutes)
        con.execute("INSERT INTO records VALUES (?, 'up', ?, ?, ?)", [mid, partition, offset, at])
    return ordered(con.execute(source_rows_sql("records", times)).fetchall())


def test_duckdb_reads_and_judges_by_kafka_timestamp() -> None:
    assert _duckdb_rows(TIMES) == EXPECTED


def test_a_first_run_judges_every_settled_record() -> None:
    first = SourceTimes(TIMES.read_from, SNAPSHOT, None, TIMES.settled_to)
    judged = {m for m, _, judge in _duckdb_rows(first) if judge}
    assert judged == {"seen-earlier", "settled", None, "edge"}
