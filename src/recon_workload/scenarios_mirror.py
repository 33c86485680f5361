"""MirrorMaker 2 as a hop: a ``MirrorSourceConnector`` on the project's Connect worker replicates
the run's topic from the project's cluster to the replica cluster (``kafka_replica``), where the
default replication policy names it ``<source alias>.<topic>`` (:func:`target_topic`).

- ``mirror_worker_restart``: the worker is SIGKILLed mid-replication (records copied since its
  last offset flush are copied again after the restart: duplicates in the target) and the
  connector filters records with an SMT (a ``Filter`` with a ``HasHeaderKey`` predicate on
  :data:`DROP_HEADER`): those never reach the target on purpose.
- ``mirror_target_retention``: once everything is replicated, the target's oldest records are
  removed (``delete_records``, what retention does) before the run reads them: the messages they
  carried are ``unverifiable``.

The ground truth is a read-back of both clusters (:mod:`recon_workload.hop`); what the hop has
claimed of the source is the connector's source offsets the worker stored. Each connector has a
name of the run's own and is deleted before the scenario returns.
"""

from __future__ import annotations

import dataclasses
import re
import time
from typing import Any

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from recon.config.connections import kafka_connection
from recon_workload import connect, kafka_io
from recon_workload.errors import WorkloadError
from recon_workload.hop import KafkaTarget
from recon_workload.ledger import Produced
from recon_workload.messages import Message
from recon_workload.names import RunNames
from recon_workload.producers import IDEMPOTENT, plan, send_all
from recon_workload.runner import Outcome, Run

REPLICA_CONN_ID = "kafka_replica"
#: ``source.cluster.alias``: the replica of topic T is ``recon.T``.
SOURCE_ALIAS = "recon"
#: A record carrying this header is dropped by the filtering connector's SMT.
DROP_HEADER = "recon-drop"
#: The ``expect`` a pipeline over the filtering hop declares: the records its SMT keeps.
EXPECT = {"not": {"header": DROP_HEADER, "present": True}}
MIRROR_SOURCE = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
RESTART_DEFAULTS = {"filter_fraction": 0.1}
RETENTION_DEFAULTS = {"removed_fraction": 0.5}
#: How long the connector may take to copy and claim everything (the worker flushes its offsets
#: every 10 s: scripts/connect.sh).
CATCH_UP_SECONDS = 90.0


def target_topic(topic: str) -> str:
    """The replica's name under MirrorMaker 2's DefaultReplicationPolicy."""
    return f"{SOURCE_ALIAS}.{topic}"


def replica_conf() -> dict[str, Any]:
    """The replica cluster's client settings (connection ``kafka_replica``)."""
    return dict(kafka_connection(REPLICA_CONN_ID).config)


def connector_name(names: RunNames) -> str:
    return f"{names.group()}-mm2"


def cleanup(names: RunNames) -> None:
    """Remove what a run left outside the project's cluster: its connector and its replica."""
    connect.delete(connector_name(names))
    kafka_io.delete_topics(replica_conf(), [target_topic(names.topic())])


def _connector_config(source: str, replica: dict[str, Any], filtered: bool) -> dict[str, str]:
    bootstrap = str(replica["bootstrap.servers"])
    config = {
        "connector.class": MIRROR_SOURCE,
        "tasks.max": "1",
        "source.cluster.alias": SOURCE_ALIAS,
        "target.cluster.alias": "replica",
        "source.cluster.bootstrap.servers": str(kafka_io.base_config()["bootstrap.servers"]),
        "target.cluster.bootstrap.servers": bootstrap,
        # The task's records go out through the worker's producer, which writes to the worker's
        # own cluster unless the connector points it at the target.
        "producer.override.bootstrap.servers": bootstrap,
        "topics": re.escape(source),
        "replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
        "sync.topic.acls.enabled": "false",
        "sync.topic.configs.enabled": "false",
    }
    if filtered:
        config |= {
            "transforms": "drop",
            "transforms.drop.type": "org.apache.kafka.connect.transforms.Filter",
            "transforms.drop.predicate": "marked",
            "predicates": "marked",
            "predicates.marked.type": (
                "org.apache.kafka.connect.transforms.predicates.HasHeaderKey"
            ),
            "predicates.marked.name": DROP_HEADER,
        }
    return config


def _claimed(name: str, source: str) -> dict[int, int]:
    """The next source offset per partition the connector has stored (MirrorMaker 2 stores the
    last replicated record's offset)."""
    out: dict[int, int] = {}
    for partition, offset in connect.source_offsets(name):
        if partition.get("topic") == source and partition.get("cluster") == SOURCE_ALIAS:
            out[int(partition["partition"])] = int(offset["offset"]) + 1
    return out


def _ends(conf: dict[str, Any], topic: str, partitions: int) -> dict[int, int]:
    """The high watermark of each partition of ``topic`` on the cluster of ``conf``."""
    consumer = Consumer(kafka_io.quiet({**conf, "group.id": f"wl-ends-{topic}"}))
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in range(partitions)
        }
    finally:
        consumer.close()


def _wait_claimed(
    run: Run, name: str, source: str, produced: list[Produced], dropped: set[str]
) -> dict[int, int]:
    """Until the connector has stored every record it copies as replicated. A record the SMT
    dropped is only claimed with a later record it copies (the worker stores no offset for a
    dropped record): a partition's dropped tail stays unclaimed, pending."""
    needed: dict[int, int] = {}
    for p in produced:
        if p.position is not None and p.message_id not in dropped:
            at = p.position
            needed[at.partition] = max(needed.get(at.partition, 0), at.offset + 1)
    deadline = time.monotonic() + CATCH_UP_SECONDS
    while True:
        claimed = _claimed(name, source)
        if all(claimed.get(p, 0) >= n for p, n in needed.items()):
            return claimed
        if time.monotonic() > deadline:
            raise WorkloadError(
                f"connector {name} claimed {claimed} of {source} after {CATCH_UP_SECONDS:.0f} s; "
                f"it copied records up to {needed}"
            )
        time.sleep(1)


def _count(conf: dict[str, Any], topic: str, partitions: int) -> int:
    return len(kafka_io.scan_topic(conf, topic, partitions, "read_uncommitted"))


def _start(run: Run, filtered: bool) -> tuple[str, str, str, dict[str, Any]]:
    names = run.names
    source, name = names.topic(), connector_name(names)
    replica = replica_conf()
    target = target_topic(source)
    cleanup(names)
    kafka_io.create_topics(run.conf, [source], run.partitions)
    # The replica topic is made here, not by the connector, so a read-back never races its birth.
    kafka_io.create_topics(replica, [target], run.partitions)
    connect.create(name, _connector_config(source, replica, filtered))
    connect.wait_running(name)
    run.progress.step(f"connector {name}: {source} -> {REPLICA_CONN_ID}/{target}")
    return source, target, name, replica


def _marked(messages: list[Message], fraction: float, seed: int) -> tuple[list[Message], set[str]]:
    """Every n-th message carries the drop header (at least one when ``fraction`` > 0)."""
    if fraction <= 0:
        return messages, set()
    step = max(1, round(1 / fraction))
    out, dropped = [], set()
    for i, m in enumerate(messages):
        if (i + seed) % step == 0 and m.message_id is not None:
            m = dataclasses.replace(m, headers=[*m.headers, (DROP_HEADER, b"1")])
            dropped.add(m.message_id)
        out.append(m)
    return out, dropped


def mirror_worker_restart(run: Run) -> Outcome:
    """MirrorMaker 2 (MirrorSourceConnector on the Connect worker) replicates the topic to the
    replica cluster as recon.<topic>; its SMT filters the records carrying the recon-drop header
    (excluded: the pipeline expects them absent); the worker is SIGKILLed after copying records
    it has not yet stored as replicated, then restarted: they are copied again (duplicated)."""
    source, target, name, replica = _start(run, filtered=True)
    messages, dropped = _marked(
        plan(run.names.run_tag, run.messages, run.seed), run.rates["filter_fraction"], run.seed
    )
    first, second = int(len(messages) * 0.4), int(len(messages) * 0.7)
    conf = {**run.conf, **IDEMPOTENT}
    produced: list[Produced] = []
    try:
        produced += send_all(conf, source, messages[:first], run.progress)
        _wait_claimed(run, name, source, produced, dropped)  # a flush stored the first part
        produced += send_all(conf, source, messages[first:second], run.progress)
        expected = sum(1 for m in messages[:second] if m.message_id not in dropped)
        deadline = time.monotonic() + CATCH_UP_SECONDS
        while _count(replica, target, run.partitions) < expected:
            if time.monotonic() > deadline:
                raise WorkloadError(f"{target} did not receive the second part in time")
            time.sleep(0.2)
        at_kill = _claimed(name, source)
        run.faults["claimed_at_kill"] = {str(p): o for p, o in sorted(at_kill.items())}
        down = connect.kill_and_restart()
        run.faults["worker_down_seconds"] = round(down, 1)
        run.progress.step(f"Connect worker killed and restarted ({down:.1f} s down)")
        produced += send_all(conf, source, messages[second:], run.progress)
        connect.wait_running(name)
        claimed = _wait_claimed(run, name, source, produced, dropped)
    finally:
        connect.delete(name)
    run.faults["filtered"] = len(dropped)
    target_spec = KafkaTarget(REPLICA_CONN_ID, replica, target, claimed, filtered=dropped)
    return Outcome(source, [source], name, produced, target=target_spec)


def mirror_target_retention(run: Run) -> Outcome:
    """MirrorMaker 2 replicates the topic to the replica cluster; once all is copied, the oldest
    removed_fraction of each target partition is removed (delete_records, as retention does)
    before the run reads it: those messages are unverifiable, the rest delivered."""
    source, target, name, replica = _start(run, filtered=False)
    try:
        messages = plan(run.names.run_tag, run.messages, run.seed)
        produced = send_all({**run.conf, **IDEMPOTENT}, source, messages, run.progress)
        claimed = _wait_claimed(run, name, source, produced, set())
    finally:
        connect.delete(name)
    copies = kafka_io.scan_topic(replica, target, run.partitions, "read_committed")
    if len(copies) < len(messages):
        raise WorkloadError(f"{target} holds {len(copies)} of {len(messages)} records")
    ends = _ends(replica, target, run.partitions)
    cut = {p: int(e * run.rates["removed_fraction"]) for p, e in ends.items()}
    removed: dict[str, list[kafka_io.Position]] = {}
    for r in copies:
        if r.position.offset < cut[r.position.partition] and r.message_id is not None:
            removed.setdefault(r.message_id, []).append(r.position)
    admin = AdminClient(kafka_io.quiet(replica))
    doomed = [TopicPartition(target, p, o) for p, o in cut.items() if o > 0]
    for future in admin.delete_records(doomed, request_timeout=30).values():
        future.result(timeout=30)
    run.faults["target_removed_before"] = {str(p): o for p, o in sorted(cut.items())}
    run.progress.step(f"removed {len(removed)} records from {target} (delete_records)")
    target_spec = KafkaTarget(REPLICA_CONN_ID, replica, target, claimed, removed=removed)
    return Outcome(source, [source], name, produced, target=target_spec)
