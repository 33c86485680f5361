"""The local engine's Kafka read under its first name: the code lives in :mod:`recon.local.kafka`.

Kafka offset ranges to Parquet, in parallel reader processes, with the messageId extracted:
:func:`read_ranges` starts the readers (:mod:`recon.local.kafka.pool`), :func:`read_task` is one
reader's work (:mod:`recon.local.kafka.reader`), :func:`extract_ids` the id extraction
(:mod:`recon.message_ids`). A reader process is ``python -m recon.local.kafka``.
"""

from __future__ import annotations

from recon.local.kafka.chunk import CHUNK_RECORDS
from recon.local.kafka.pool import ReaderLost, Readers, default_workers, read_ranges, spread
from recon.local.kafka.reader import FETCH_SETTINGS, STALL_SECONDS, KafkaReadFailed, read_task
from recon.local.kafka.task import ReadTask
from recon.message_ids import extract_ids, raw_schema, window_schema

__all__ = [
    "CHUNK_RECORDS",
    "FETCH_SETTINGS",
    "STALL_SECONDS",
    "KafkaReadFailed",
    "ReadTask",
    "ReaderLost",
    "Readers",
    "default_workers",
    "extract_ids",
    "raw_schema",
    "read_ranges",
    "read_task",
    "spread",
    "window_schema",
]
