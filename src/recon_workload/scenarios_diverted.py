"""Scenarios whose consumer does not write every record it reads (issue 72): a Spring-style
consumer with a real dead-letter topic, a retry-topic chain, and a fan-out by type (the consumer
process is :mod:`recon_workload.diverting`).

Their ground truth comes from what was read back, as every scenario's: a committed message with
no sink row whose record is found (by messageId) in one of the run's dead-letter or retry topics
is ``diverted`` (:func:`judge_diverted`), not ``lost``; in the fan-out, each table's pipeline
expects one type, and the other type's messages are ``excluded`` (:func:`judge_excluded`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence

from recon_workload import kafka_io, sink
from recon_workload.diverting import (
    DivertingSpec,
    dead_letter_topic,
    record_type,
    retry_topics,
)
from recon_workload.ledger import LedgerRow
from recon_workload.messages import Message
from recon_workload.producers import IDEMPOTENT, plan, send_all
from recon_workload.runner import Outcome, Run
from recon_workload.supervisor import KillPlan, supervise

#: The share of the messages the consumer cannot process (the dead-letter consumer), sends to
#: the retry topic (the retry chain), and of those the share the retry writes.
DLT_DEFAULTS = {"poison_fraction": 0.05}
RETRY_DEFAULTS = {"retry_fraction": 0.1, "recovered_fraction": 0.5}
#: The share of the fan-out's messages of type ``refund`` (the others are ``order``).
FANOUT_DEFAULTS = {"refund_fraction": 0.3}


def _pick(ids: Sequence[str], fraction: float, seed: int) -> list[str]:
    # At least one: a fraction with no diverted message proves nothing.
    count = max(1, round(len(ids) * fraction))
    return sorted(random.Random(seed).sample(list(ids), count))


def _consume(run: Run, spec: DivertingSpec, topics: Sequence[str]) -> None:
    kafka_io.create_topics(run.conf, list(topics), run.partitions)
    run.progress.step(f"consumer[{spec.mode}] on {spec.topic}")
    out = supervise(
        "recon_workload.diverting", spec.to_json(), KillPlan(), run.progress,
        f"consumer[{spec.mode}]",
    )  # fmt: skip
    run.faults["consumer_starts"] = [out.starts]


def dead_letter_consumer(run: Run) -> Outcome:
    """Idempotent producer; a consumer that sends the records it cannot process (a seeded
    poison_fraction of them) to <topic>.DLT with Spring's headers and commits past them: every
    other message delivered once, the poison ones diverted."""
    names = run.names
    topic, group = names.topic(), names.group()
    messages = plan(names.run_tag, run.messages, run.seed)
    ids = [m.message_id for m in messages if m.message_id is not None]
    poison = _pick(ids, run.rates["poison_fraction"], run.seed)
    kafka_io.create_topics(run.conf, [topic], run.partitions)
    with sink.transaction() as cur:
        sink.create_tables(cur, names.table)
    produced = send_all({**run.conf, **IDEMPOTENT}, topic, messages, run.progress)
    dlt = dead_letter_topic(topic)
    spec = DivertingSpec("dlt", topic, run.partitions, group, names.table, poison_ids=poison)
    _consume(run, spec, [dlt])
    run.faults["poison"] = len(poison)
    return Outcome(topic, [topic, dlt], group, produced, diverted_topics=[dlt])


def retry_topic_consumer(run: Run) -> Outcome:
    """Idempotent producer; a consumer that sends a seeded retry_fraction of the records to
    <topic>-retry-0; its retry consumer writes recovered_fraction of those and sends the rest
    to <topic>-dlt: the recovered ones delivered, the others diverted."""
    names = run.names
    topic, group = names.topic(), names.group()
    messages = plan(names.run_tag, run.messages, run.seed)
    ids = [m.message_id for m in messages if m.message_id is not None]
    retried = _pick(ids, run.rates["retry_fraction"], run.seed)
    recovered = _pick(retried, run.rates["recovered_fraction"], run.seed + 1)
    kafka_io.create_topics(run.conf, [topic], run.partitions)
    with sink.transaction() as cur:
        sink.create_tables(cur, names.table)
    produced = send_all({**run.conf, **IDEMPOTENT}, topic, messages, run.progress)
    retry, dlt = retry_topics(topic)
    spec = DivertingSpec(
        "retry", topic, run.partitions, group, names.table, retry_ids=retried,
        recovered_ids=recovered,
    )  # fmt: skip
    _consume(run, spec, [retry, dlt])
    run.faults["retried"], run.faults["recovered"] = len(retried), len(recovered)
    return Outcome(topic, [topic, retry, dlt], group, produced, diverted_topics=[retry, dlt])


def typed(messages: Iterable[Message], refunds: set[str]) -> list[Message]:
    """The messages with a JSON ``type``: ``refund`` for the ids in ``refunds``, else
    ``order``."""
    out = []
    for m in messages:
        if m.message_id is None or m.value is None:
            out.append(m)
            continue
        doc = json.loads(m.value)
        doc["type"] = "refund" if m.message_id in refunds else "order"
        out.append(Message(m.seq, m.message_id, m.key, json.dumps(doc).encode(), m.headers))
    return out


def fanout_by_type(run: Run) -> Outcome:
    """Idempotent producer of orders and a seeded refund_fraction of refunds; one consumer
    writing orders to the run's table and refunds to <table>_other: in the orders pipeline
    (expect type in [order]) every refund is excluded, every order delivered."""
    names = run.names
    topic, group = names.topic(), names.group()
    base = plan(names.run_tag, run.messages, run.seed)
    ids = [m.message_id for m in base if m.message_id is not None]
    refunds = set(_pick(ids, run.rates["refund_fraction"], run.seed))
    messages = typed(base, refunds)
    other = f"{names.table}_other"
    kafka_io.create_topics(run.conf, [topic], run.partitions)
    with sink.transaction() as cur:
        sink.create_tables(cur, names.table)
        sink.create_tables(cur, other)
    produced = send_all({**run.conf, **IDEMPOTENT}, topic, messages, run.progress)
    spec = DivertingSpec("fanout", topic, run.partitions, group, names.table, other_table=other)
    _consume(run, spec, [])
    run.faults["refunds"] = len(refunds)
    return Outcome(topic, [topic], group, produced, expected_type="order")


def judge_diverted(entries: Sequence[LedgerRow], dead: Iterable[kafka_io.ReadRecord]) -> int:
    """The ground truth of ``diverted``: each ``lost`` entry whose messageId a record of the
    dead-letter or retry topics carries (read back from them) becomes ``diverted``.

    :returns: how many.
    """
    where = {r.message_id: r.position for r in dead if r.message_id is not None}
    n = 0
    for e in entries:
        if e.expected_verdict == "lost" and e.message_id in where:
            at = where[e.message_id]
            e.expected_verdict = "diverted"
            e.detail = f"in {at.topic}/{at.partition}@{at.offset}"
            n += 1
    return n


def judge_excluded(
    entries: Sequence[LedgerRow], records: Iterable[kafka_io.ReadRecord], expected_type: str
) -> int:
    """The ground truth of ``excluded``: each judged entry whose record's JSON ``type`` is not
    ``expected_type`` becomes ``excluded``.

    :returns: how many.
    """
    other = {r.message_id for r in records if record_type(r.value) != expected_type}
    n = 0
    for e in entries:
        if e.message_id in other and e.expected_verdict in ("delivered", "lost", "duplicated"):
            e.expected_verdict = "excluded"
            n += 1
    return n
