"""The local engine's two ways of reading a window (``recon.read.kafka_local.pool``): a small
window on a thread of the calling process, a larger one in reader processes. Both must leave the
same records, the same quarantined ones and the same count; a read on a thread must end when it
is stopped, not when the broker's stall timeout would end it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from recon.config import MessageIdSpec
from recon.read.kafka_local.pool import IN_PROCESS_OFFSETS, read_in_process, read_ranges
from recon.read.ranges import OffsetRange

pytestmark = pytest.mark.integration

PARTITIONS = 3
RECORDS = 900
#: Record i has no id field when i % 97 == 0: quarantined, as invalid, by either way of reading.
NO_ID_EVERY = 97


def _produce(kafka_config: dict[str, str], topic: str) -> list[OffsetRange]:
    from confluent_kafka import Producer

    producer = Producer({**kafka_config, "linger.ms": 5})
    ends = [0] * PARTITIONS
    for i in range(RECORDS):
        value = {"pad": i} if i % NO_ID_EVERY == 0 else {"id": f"m{i:05d}", "pad": i}
        producer.produce(topic, json.dumps(value).encode(), partition=i % PARTITIONS)
        ends[i % PARTITIONS] += 1
    assert producer.flush(30) == 0
    return [OffsetRange(topic, p, 0, ends[p]) for p in range(PARTITIONS)]


def _rows(directory: Path) -> list[tuple[object, ...]]:
    table = pq.read_table(directory)
    cols = ["partition", "offset", "message_id", "invalid_reason"]
    return sorted(zip(*(table.column(c).to_pylist() for c in cols), strict=True))


def test_a_window_reads_the_same_on_a_thread_and_in_reader_processes(
    kafka_config: dict[str, str], new_topic: Callable[..., str], tmp_path: Path
) -> None:
    ranges = _produce(kafka_config, new_topic("readmodes", partitions=PARTITIONS))
    assert read_in_process(ranges), "a 900-record window is read on a thread by default"
    assert not read_in_process([OffsetRange("t", 0, 0, IN_PROCESS_OFFSETS + 1)])
    spec = MessageIdSpec("json_field", "id")
    on_thread = read_ranges(kafka_config, ranges, spec, str(tmp_path / "thread"), in_process=True)
    in_procs = read_ranges(kafka_config, ranges, spec, str(tmp_path / "procs"), workers=2,
                           in_process=False)  # fmt: skip
    assert on_thread.wait() == in_procs.wait() == RECORDS
    assert len(list((tmp_path / "procs").glob("*.parquet"))) == 2
    rows = _rows(tmp_path / "thread")
    assert rows == _rows(tmp_path / "procs")
    quarantined = [r for r in rows if r[3] is not None]
    assert len(quarantined) == len(range(0, RECORDS, NO_ID_EVERY))
    assert {r[2] for r in rows if r[3] is None} == {
        f"m{i:05d}" for i in range(RECORDS) if i % NO_ID_EVERY
    }


def test_a_read_on_a_thread_ends_when_stopped(
    kafka_config: dict[str, str], new_topic: Callable[..., str], tmp_path: Path
) -> None:
    ranges = _produce(kafka_config, new_topic("readstop", partitions=PARTITIONS))
    # Past the partitions' ends: the read waits for records that never come (until its stall
    # timeout, minutes away) unless it is stopped.
    beyond = [OffsetRange(r.topic, r.partition, r.start, r.end + 1_000) for r in ranges]
    read = read_ranges(kafka_config, beyond, MessageIdSpec("json_field", "id"),
                       str(tmp_path / "w"), in_process=True)  # fmt: skip
    time.sleep(2)
    stopper = threading.Thread(target=read.stop)
    stopper.start()
    stopper.join(timeout=30)
    # Its stall timeout is minutes away: ending within the join's 30 s is ending on stop().
    assert not stopper.is_alive(), "stop() did not end the read"
