"""What one reader process is asked to read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from recon.config import MessageIdSpec
from recon.read.kafka_spark import OffsetRange


@dataclass(frozen=True)
class ReadTask:
    """One worker's share of a read: its ranges, and the Parquet file it writes."""

    config: dict[str, Any]
    ranges: tuple[OffsetRange, ...]
    isolation_level: str
    spec: MessageIdSpec
    path: str
    #: read each record's Kafka timestamp (a pipeline that declares ``sink.time_column``);
    #: otherwise the column stays null, saving a tuple per record.
    with_time: bool = False
