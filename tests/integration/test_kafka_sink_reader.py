"""A Kafka sink's rows and position (issue 73, item 1) on the replica cluster: a target topic
with committed records, a duplicate, an aborted transaction, a transaction still open and
records removed by retention, read as sink rows by offsets kept per partition."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from recon.config import MessageIdSpec
from recon.read.target_kafka import open_message_ids, sink_rows
from recon.snapshot import target_position as tp

pytestmark = pytest.mark.integration

SPEC = MessageIdSpec("header", "message_id")


def _send(producer: Any, topic: str, mid: str, partition: int) -> None:
    producer.produce(
        topic, value=b"{}", headers=[("message_id", mid.encode())], partition=partition
    )


@pytest.fixture(scope="module")
def target() -> Iterator[tuple[dict[str, str], str, Any]]:
    """Partition 0: m0 m1 m1 (a duplicate), an aborted transaction (x0), m2; partition 1: r0 r1
    removed by retention, then r2; then a transaction left open on partition 1 (o0)."""
    from confluent_kafka import Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    config = {"bootstrap.servers": os.environ["RECON_KAFKA_REPLICA_BOOTSTRAP"]}
    topic = f"test-sink-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(config)
    admin.create_topics([NewTopic(topic, num_partitions=2)])[topic].result(timeout=30)
    plain = Producer(config)
    for mid in ("m0", "m1", "m1"):
        _send(plain, topic, mid, 0)
    for mid in ("r0", "r1"):
        _send(plain, topic, mid, 1)
    assert plain.flush(30) == 0
    aborting = Producer({**config, "transactional.id": f"{topic}-a"})
    aborting.init_transactions(30)
    aborting.begin_transaction()
    _send(aborting, topic, "x0", 0)
    aborting.flush(30)
    aborting.abort_transaction(30)
    _send(plain, topic, "m2", 0)
    _send(plain, topic, "r2", 1)
    assert plain.flush(30) == 0
    admin.delete_records([TopicPartition(topic, 1, 2)])[TopicPartition(topic, 1, 2)].result(30)
    holding = Producer({**config, "transactional.id": f"{topic}-o"})
    holding.init_transactions(30)
    holding.begin_transaction()
    _send(holding, topic, "o0", 1)
    holding.flush(30)
    yield config, topic, holding
    holding.abort_transaction(30)
    admin.delete_topics([topic])[topic].result(timeout=30)


def test_a_target_is_read_by_its_offsets_committed_only(
    target: tuple[dict[str, str], str, Any],
) -> None:
    config, topic, holding = target
    now = tp.partitions_now(config, topic)
    ranges = tp.plan(topic, None, now)
    by_partition = {r.partition: r for r in ranges}
    # Partition 1's first two records went before any run read them: unverifiable, not lost.
    assert by_partition[1].removed == 2 and by_partition[0].removed == 0
    assert tp.removed_any(ranges)
    rows = pa.concat_tables(list(sink_rows(config, ranges, SPEC))).to_pylist()
    ids = sorted(r["message_id"] for r in rows)
    # The aborted x0 is no delivery, the open o0 not yet one; the duplicate is two rows.
    assert ids == ["m0", "m1", "m1", "m2", "r2"]
    keys = {r["sink_key"] for r in rows if r["message_id"] == "m1"}
    assert keys == {f"{topic}:0:1", f"{topic}:0:2"}
    assert all(r["sink_time"] is not None for r in rows)
    assert open_message_ids(config, ranges, SPEC) == {"o0"}

    # The next run resumes at this run's position: nothing new yet but the open transaction's.
    stored = tp.position_json(ranges)
    again = tp.plan(topic, tp.position_of(stored), tp.partitions_now(config, topic))
    assert not tp.removed_any(again)
    assert list(sink_rows(config, again, SPEC)) == []
    holding.commit_transaction(30)
    later = tp.plan(topic, tp.position_of(stored), tp.partitions_now(config, topic))
    rows = pa.concat_tables(list(sink_rows(config, later, SPEC))).to_pylist()
    assert [r["message_id"] for r in rows] == ["o0"]
    assert open_message_ids(config, later, SPEC) == set()
    holding.begin_transaction()  # the fixture's end aborts one


def test_a_missing_target_topic_is_named() -> None:
    from recon.snapshot.offsets import KafkaSnapshotError

    config = {"bootstrap.servers": os.environ["RECON_KAFKA_REPLICA_BOOTSTRAP"]}
    with pytest.raises(KafkaSnapshotError, match="no-such-topic-x"):
        tp.partitions_now(config, "no-such-topic-x", timeout=10, retry_for=0)


def test_a_run_keeps_its_ranges_and_copies_the_target_as_its_sink_rows(
    target: tuple[dict[str, str], str, Any], tmp_path: Any
) -> None:
    import pyarrow.parquet as pq
    from fixtures.declarations import doc

    from recon.config import parse_pipelines
    from recon.read.sink_copy import copy_sink_rows_for_run, is_copied
    from recon.read.target_copy import facts_of
    from recon.snapshot import target_step

    _, topic, _ = target
    sink = {"kind": "kafka", "connection": "kafka_replica", "topic": topic,
            "message_id": {"header": "message_id"}}  # fmt: skip
    cfg = parse_pipelines(doc(sink=sink))["payments"]
    ranges = target_step.ranges_for_run(cfg, None)
    kept = target_step.ranges_json(ranges)
    assert target_step.ranges_of(topic, kept) == ranges
    copy = str(tmp_path / "sink")
    # Step 2's copy, as it reads the ranges step 1 kept (a Kafka sink has no table).
    kept_by_step_1 = SimpleNamespace(sink_snapshot_to=kept)
    copied = copy_sink_rows_for_run(cfg, kept_by_step_1, None, copy)  # type: ignore[arg-type]
    assert is_copied(copy)
    rows = pq.read_table(f"{copy}/part-0.parquet").to_pylist()
    assert copied == len(rows)
    # o0 too once the other test has committed its transaction
    ids = sorted(r["message_id"] for r in rows if r["message_id"] != "o0")
    assert ids == ["m0", "m1", "m1", "m2", "r2"]
    facts = facts_of(copy)
    assert facts.removed
    assert facts.open_ids <= {"o0"}  # the other test may have committed it
    # The next run starts where this one's ranges ended.
    after = target_step.ranges_for_run(cfg, kept)
    assert [r.start for r in after] == [r.end for r in ranges]


def test_a_kafka_sink_pipeline_s_preflight_checks_both_topics(
    target: tuple[dict[str, str], str, Any], kafka_config: dict[str, str]
) -> None:
    """A Kafka sink's pipeline is checked without any database: both Kafka connections and both
    topics, a missing target topic named in one line at ``sink.topic``."""
    from confluent_kafka.admin import AdminClient, NewTopic
    from fixtures.declarations import doc

    from recon.config import parse_pipelines
    from recon.errors import ReconError
    from recon.stack.preflight import check_pipeline

    _, topic, _ = target
    source = f"test-sink-src-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(kafka_config)
    admin.create_topics([NewTopic(source, num_partitions=1)])[source].result(timeout=30)

    def declared(sink_topic: str) -> Any:
        sink = {"kind": "kafka", "connection": "kafka_replica", "topic": sink_topic,
                "message_id": {"header": "message_id"}}  # fmt: skip
        return parse_pipelines(doc(sink=sink, kafka__topic=source))["payments"]

    try:
        check_pipeline(declared(topic))
        with pytest.raises(ReconError) as caught:
            check_pipeline(declared("no-such-target-x"))
        said = str(caught.value)
        assert "pipeline 'payments': sink.topic: topic 'no-such-target-x'" in said
        assert "\n" not in said
    finally:
        admin.delete_topics([source])[source].result(timeout=30)
