"""A read on a thread of the calling process (``recon.read.kafka_local.pool.InProcessRead``)
fails in the caller: what the reader raised, ``wait`` raises, and nothing is left reading."""

from __future__ import annotations

from pathlib import Path

import pytest

from recon.config import MessageIdSpec
from recon.read.kafka_local.pool import IN_PROCESS_OFFSETS, read_in_process, read_ranges
from recon.read.ranges import OffsetRange

pytestmark = pytest.mark.unit


def test_the_windows_size_decides_where_it_is_read() -> None:
    assert read_in_process([OffsetRange("t", 0, 10, 10 + IN_PROCESS_OFFSETS)])
    assert not read_in_process([OffsetRange("t", 0, 0, IN_PROCESS_OFFSETS),
                                OffsetRange("t", 1, 5, 6)])  # fmt: skip
    # Empty (or reversed) ranges read nothing and weigh nothing.
    assert read_in_process([OffsetRange("t", 0, 9, 3), OffsetRange("t", 1, 0, IN_PROCESS_OFFSETS)])


def test_what_the_reader_raises_on_its_thread_the_caller_gets(tmp_path: Path) -> None:
    from confluent_kafka import KafkaException

    # librdkafka refuses a setting it does not know when the consumer is made, on the thread.
    config = {"bootstrap.servers": "127.0.0.1:1", "no.such.setting": "1"}
    read = read_ranges(config, [OffsetRange("t", 0, 0, 5)], MessageIdSpec("key"),
                       str(tmp_path / "w"), in_process=True)  # fmt: skip
    with pytest.raises(KafkaException, match="no.such.setting"):
        read.wait()
    read.stop()  # after a failure: returns at once
