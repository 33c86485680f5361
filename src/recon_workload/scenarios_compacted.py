"""A compacted topic (``cleanup.policy=compact``): a changelog whose older versions the broker's
log cleaner removes.

Each key (an entity) is written several times, a distinct messageId per version, as a changelog
or CDC topic is; the consumer writes every version it reads, then commits. Then every partition's
segment is closed (one more record after ``segment.ms``) and the scenario waits until the real log
cleaner has kept only the newest version of each key. The ground truth is what is left: the
newest versions are ``delivered``; the sink row of a version the cleaner removed is
``unverifiable`` (``recon_workload.ledger``: no record of the topic can prove or refute it), and
a version removed before the consumer read it leaves no trace at all.

Registered in :data:`recon_workload.registry.SCENARIOS` like the others.
"""

from __future__ import annotations

import json
import time
from typing import Any

from confluent_kafka import Producer

from recon_workload import kafka_io, sink
from recon_workload.errors import WorkloadError
from recon_workload.ledger import Produced
from recon_workload.messages import HEADER, Message
from recon_workload.producers import IDEMPOTENT, send_all
from recon_workload.runner import Outcome, Run
from recon_workload.scenarios import _consume

#: Versions per key, and the consumer's kill rate (killed between write and commit: duplicates).
COMPACTED_DEFAULTS = {"versions": 3, "kill_rate": 0.0}
#: The topic's settings: segments close after 100 ms and any dirt is worth cleaning, so the
#: broker's cleaner (one check per ``log.cleaner.backoff.ms``, 15 s by default) cleans them.
TOPIC_CONFIG = {
    "cleanup.policy": "compact",
    "segment.ms": "100",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "100",
    "min.compaction.lag.ms": "0",
}
#: How long the scenario waits for the log cleaner.
CLEANER_WAIT_SECONDS = 180.0


def _versions(run_tag: str, count: int, versions: int) -> list[Message]:
    """``count`` messages over ``count // versions`` keys, each key's versions in order."""
    keys = max(1, count // max(1, versions))
    out = []
    for seq in range(count):
        mid, key = f"{run_tag}-{seq:06d}", f"{run_tag}-entity-{seq % keys:05d}"
        value = json.dumps({"id": mid, "entity": key, "version": seq // keys}).encode()
        out.append(Message(seq, mid, key.encode(), value, [(HEADER, mid.encode())]))
    return out


def _close_segments(run: Run, topic: str, first_seq: int) -> list[Produced]:
    """One record per partition after ``segment.ms``: each partition's segment of the versions
    is closed (the cleaner never cleans the active one). Each is a message of its own key."""
    time.sleep(0.5)
    producer = Producer(kafka_io.quiet({**run.conf, **IDEMPOTENT}))
    reports: list[Produced] = []

    def report(seq: int, mid: str) -> Any:
        def done(err: Any, msg: Any) -> None:
            position = kafka_io.where(msg) if err is None else None
            reports.append(Produced(seq, mid, err is None, "good", position))

        return done

    for p in range(run.partitions):
        seq = first_seq + p
        mid = f"{run.names.run_tag}-tail-{p:03d}"
        value = json.dumps({"id": mid, "entity": mid}).encode()
        headers = [(HEADER, mid.encode())]
        producer.produce(
            topic, value, mid.encode(), partition=p, headers=headers, on_delivery=report(seq, mid)
        )
    if producer.flush(30) != 0 or not all(r.acked for r in reports):
        raise WorkloadError(f"the records closing the segments of {topic} were not all delivered")
    return reports


def _wait_for_cleaner(run: Run, topic: str, newest: set[str]) -> None:
    """Until the topic holds exactly the newest version of each key and the closing records."""
    deadline = time.monotonic() + CLEANER_WAIT_SECONDS
    while True:
        left = kafka_io.scan_topic(run.conf, topic, run.partitions, "read_uncommitted")
        ids = {r.message_id for r in left}
        if ids == newest:
            run.progress.step(f"log cleaner done: {len(left)} records left in {topic}")
            return
        if time.monotonic() > deadline:
            raise WorkloadError(
                f"the log cleaner left {len(ids - newest)} superseded records in {topic} after "
                f"{CLEANER_WAIT_SECONDS:.0f} s (the broker's log.cleaner settings?)"
            )
        time.sleep(2)


def compacted_changelog(run: Run) -> Outcome:
    """A compacted topic (cleanup.policy=compact): each key written `versions` times, a distinct
    messageId per version; the consumer writes every version it reads, then commits; the broker's
    log cleaner then removes the older versions. The newest version of each key is delivered; the
    sink row of a version the cleaner removed is unverifiable (never phantom)."""
    names = run.names
    topic = names.topic()
    kafka_io.create_topics(run.conf, [topic], run.partitions, TOPIC_CONFIG)
    with sink.transaction() as cur:
        sink.create_tables(cur, names.table, ())
    run.progress.step(f"compacted topic {topic}; sink {names.qualified_table}")
    messages = _versions(names.run_tag, run.messages, int(run.rates["versions"]))
    produced = send_all({**run.conf, **IDEMPOTENT}, topic, messages, run.progress)
    _consume(run, "write_then_commit", topic, run.rates["kill_rate"])
    produced += _close_segments(run, topic, len(messages))
    _consume(run, "write_then_commit", topic, 0.0, stage=2)
    by_key: dict[bytes | None, str | None] = {}
    for m in messages:
        by_key[m.key] = m.message_id
    newest = {mid for mid in by_key.values() if mid is not None}
    newest |= {p.message_id for p in produced[len(messages) :] if p.message_id is not None}
    _wait_for_cleaner(run, topic, newest)
    return Outcome(topic, [topic], names.group(), produced, compacted=True)
