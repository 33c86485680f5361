"""An upstream topic's records as the rules' input ``source_rows`` (issue 20): which records a
run reads by their Kafka timestamp, which of them it judges, and how each is named; the same
statement on both engines."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from recon.read.source import SourceTimes
from recon.read.source_topic import source_rows_sql
from recon.rules.render import for_dialect

pytestmark = pytest.mark.unit

SNAPSHOT = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
# Read from a day back; judge what was written in the ten minutes before the base run's settle
# time ended and this run's (settle: one minute).
TIMES = SourceTimes(
    read_from=SNAPSHOT - timedelta(days=1), snapshot_at=SNAPSHOT,
    settled_from=SNAPSHOT - timedelta(minutes=11), settled_to=SNAPSHOT - timedelta(minutes=1),
)  # fmt: skip

# (message_id, partition, offset, minutes before the snapshot)
RECORDS = [
    ("too-old", 0, 0, 24 * 60 + 1),    # before read_from: not read
    ("seen-earlier", 0, 1, 30),        # read (names a window record), judged by an earlier run
    ("settled", 0, 2, 5),              # judged here
    (None, 1, 7, 4),                   # judged here: a record without a messageId
    ("edge", 1, 8, 1),                 # exactly at settled_to: judged here
    ("young", 1, 9, 0.5),              # read, judged by the next run
    ("after", 1, 10, -1),              # written after the snapshot: not read
]  # fmt: skip

EXPECTED = [
    ("edge", "up/1@8", True),
    ("seen-earlier", "up/0@1", False),
    ("settled", "up/0@2", True),
    ("young", "up/1@9", False),
    (None, "up/1@7", True),
]


def _rows(records: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(records, key=lambda r: (r[0] is None, r[0] or ""))


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
    return _rows(con.execute(source_rows_sql("records", times)).fetchall())


def test_duckdb_reads_and_judges_by_kafka_timestamp() -> None:
    assert _duckdb_rows(TIMES) == EXPECTED


def test_spark_reads_and_judges_by_kafka_timestamp(spark: Any) -> None:
    from pyspark.sql.types import StructType

    from recon import schemas

    # The window's columns the statement reads, as the readers type them.
    used = ("message_id", "topic", "partition", "offset", "timestamp")
    schema = StructType([schemas.WINDOW[name] for name in used])
    rows = [(m, "up", p, o, SNAPSHOT - timedelta(minutes=n)) for m, p, o, n in RECORDS]
    spark.createDataFrame(rows, schema).createOrReplaceTempView("records")
    got = [tuple(r) for r in spark.sql(for_dialect(source_rows_sql("records", TIMES), "spark"))
           .collect()]  # fmt: skip
    assert _rows(got) == EXPECTED


def test_a_first_run_judges_every_settled_record() -> None:
    first = SourceTimes(TIMES.read_from, SNAPSHOT, None, TIMES.settled_to)
    judged = {m for m, _, judge in _duckdb_rows(first) if judge}
    assert judged == {"seen-earlier", "settled", None, "edge"}
