"""How the Spark engine hands a window's offset ranges to its tasks, and how a task's failed read
reaches the run as the reader's own error (``recon.read.kafka_spark``)."""

from __future__ import annotations

import pytest

from recon.read.kafka_local.reader import KafkaReadFailed
from recon.read.kafka_spark import reraise_read_failure
from recon.read.ranges import OffsetRange, split_ranges
from recon.snapshot.offsets import KafkaAuthFailed

pytestmark = pytest.mark.unit


def test_partitions_at_least_as_many_as_the_cores_are_read_as_they_are() -> None:
    ranges = [OffsetRange("t", p, 0, 100) for p in range(4)] + [OffsetRange("t", 4, 7, 7)]
    assert split_ranges(ranges, 2) == ranges[:4]  # the empty range is no task


def test_one_large_partition_is_cut_for_every_core() -> None:
    assert split_ranges([OffsetRange("t", 0, 10, 111)], 2) == [
        OffsetRange("t", 0, 10, 61),
        OffsetRange("t", 0, 61, 111),
    ]


def test_a_range_larger_than_a_share_is_cut_and_the_cuts_cover_it_exactly() -> None:
    ranges = [OffsetRange("t", 0, 0, 1_000), OffsetRange("t", 1, 500, 600)]
    got = split_ranges(ranges, 4)  # share: 275 offsets
    assert [(r.partition, r.start, r.end) for r in got] == [
        (0, 0, 250), (0, 250, 500), (0, 500, 750), (0, 750, 1_000), (1, 500, 600),
    ]  # fmt: skip
    assert split_ranges([], 4) == []


def test_a_task_that_lost_its_broker_fails_the_run_with_the_readers_error() -> None:
    text = (
        "An exception was thrown from the Python worker.\n"
        "Traceback (most recent call last):\n"
        '  File "reader.py", line 150, in _read\n'
        "recon.read.kafka_local.reader.KafkaReadFailed: no record from the broker for 120 s "
        "while reading orders/3\n"
    )
    with pytest.raises(KafkaReadFailed, match="^no record from the broker for 120 s while"):
        reraise_read_failure(RuntimeError(text))
    with pytest.raises(KafkaAuthFailed, match="^SASL authentication error"):
        reraise_read_failure(
            RuntimeError("recon.snapshot.offsets.KafkaAuthFailed: SASL authentication error")
        )


def test_any_other_failure_is_left_to_the_caller() -> None:
    assert reraise_read_failure(RuntimeError("java.lang.OutOfMemoryError: Java heap space")) is None
