"""Where a test topic's partitions end, as a read_uncommitted and a read_committed client see
them: the high watermark and the last stable offset."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from confluent_kafka import Consumer, TopicPartition


def high_watermarks(kafka_config: Mapping[str, str], topic: str) -> dict[int, int]:
    """The end of every partition's log, open transactions included (a read_committed client,
    confluent-kafka's default, would be told the last stable offset instead)."""
    return _log_ends(kafka_config, topic, "read_uncommitted")


def last_stable_offsets(kafka_config: Mapping[str, str], topic: str) -> dict[int, int]:
    """Every partition's last stable offset: where its first open transaction begins."""
    return _log_ends(kafka_config, topic, "read_committed")


def _log_ends(kafka_config: Mapping[str, str], topic: str, isolation: str) -> dict[int, int]:
    consumer = Consumer({**kafka_config, "group.id": f"probe-{uuid.uuid4().hex[:8]}",
                         "isolation.level": isolation})  # fmt: skip
    try:
        meta = consumer.list_topics(topic, timeout=30).topics[topic]
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in meta.partitions
        }
    finally:
        consumer.close()
