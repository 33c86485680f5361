"""Scenarios with a source (``unpublished``): a transactional outbox the pipeline starts from.

The "application" commits one outbox row per message into ``<sink table>_outbox`` (beside the
sink, schema ``public``; see :attr:`recon_workload.names.RunNames.outbox_table`) and a relay
publishes the rows to the topic in ``seq`` order; the consumer then writes the sink as usual. The
outbox is the third side of the reconciliation: a message with an outbox row that no committed
record carries was never published (``unpublished``), whatever the topic and the sink agree on.

Registered in :data:`recon_workload.registry.SCENARIOS` like the others; kept apart because the
run has one more table and one more stage (the relay) than a producer writing the topic itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from recon_workload import kafka_io, sink
from recon_workload.consumer import ConsumerSpec
from recon_workload.errors import WorkloadError
from recon_workload.messages import Message
from recon_workload.producers import IDEMPOTENT, plan, send_all
from recon_workload.runner import Outcome, Run
from recon_workload.scenarios import fire_and_forget
from recon_workload.supervisor import KillPlan, supervise

#: Defaults of both scenarios' parameters (``bounce`` only matters to the fire-and-forget relay).
FIRE_AND_FORGET_DEFAULTS = {"bounce": 1, "kill_rate": 0.0}
RELAY_DEFAULTS = {"kill_rate": 0.0}
# Rows per application transaction: small, as an application commits one business change at a
# time, so the outbox's seq order is the order the messages were planned in.
_OUTBOX_TXN = 5


def outbox_fire_and_forget(run: Run) -> Outcome:
    """The application commits one outbox row per message; a relay publishes the rows in seq
    order with acks=0, no retries, while the broker is bounced mid-stream (what reached the
    dying broker is gone, yet the relay counts it sent); the consumer writes, then commits
    (kill_rate). Every outbox row the topic never got is unpublished; the rest delivered (or
    duplicated where a kill falls between a write and its commit)."""
    names = run.names
    topic = names.topic()
    published = _write_and_read_outbox(run, topic)
    produced = fire_and_forget(run, topic, published)
    _consume(run, topic)
    return Outcome(topic, [topic], names.group(), produced, source_table=_source(run))


def outbox_relay(run: Run) -> Outcome:
    """The application commits one outbox row per message; a relay publishes the rows in seq
    order with the idempotent producer (acks=all, retries), no faults; the consumer writes,
    then commits (kill_rate). Every outbox row is published and every message delivered (or
    duplicated where a kill falls between a write and its commit)."""
    names = run.names
    topic = names.topic()
    published = _write_and_read_outbox(run, topic)
    produced = send_all({**run.conf, **IDEMPOTENT}, topic, published, run.progress)
    _consume(run, topic)
    return Outcome(topic, [topic], names.group(), produced, source_table=_source(run))


def _source(run: Run) -> str:
    return run.names.qualified_outbox_table


def _write_and_read_outbox(run: Run, topic: str) -> list[Message]:
    """Create the topic, the sink and the outbox; write the outbox as the application does; read
    it back as the relay does.

    :returns: the messages the relay is to publish, in outbox ``seq`` order.
    """
    names = run.names
    kafka_io.create_topics(run.conf, [topic], run.partitions)
    with sink.transaction() as cur:
        sink.create_tables(cur, names.table, ("outbox",))
    run.progress.step(f"topic {topic}; sink {names.qualified_table}; outbox {_source(run)}")
    messages = plan(names.run_tag, run.messages, run.seed)
    write_outbox(names.outbox_table, [m.message_id for m in messages if m.message_id is not None])
    with sink.transaction() as cur:
        rows = sink.read_outbox(cur, names.outbox_table)
    run.faults["outbox_rows"] = len(rows)
    run.progress.step(f"relay: {len(rows)} outbox rows to publish to {topic}")
    return relay_messages(messages, rows)


def write_outbox(table: str, ids: Sequence[str], per_transaction: int = _OUTBOX_TXN) -> None:
    """Insert one outbox row per id, in order, a few rows per committed transaction.

    :param table: the outbox table (bare: schema ``public``).
    """
    for start in range(0, len(ids), per_transaction):
        with sink.transaction() as cur:
            sink.insert_outbox(cur, table, ids[start : start + per_transaction])


def relay_messages(
    messages: Sequence[Message], rows: Sequence[tuple[int, str | None]]
) -> list[Message]:
    """The records a relay publishes for outbox ``rows`` (``(seq, message_id)``, in seq order):
    each row's planned message, found by its id.

    A plan entry without an id has no outbox row, so the relay never publishes it.

    :raises WorkloadError: when a row names an id the plan does not hold.
    """
    by_id = {m.message_id: m for m in messages if m.message_id is not None}
    missing = [mid for _, mid in rows if mid not in by_id]
    if missing:
        raise WorkloadError(f"outbox rows name {len(missing)} unplanned ids, e.g. {missing[0]!r}")
    return [by_id[mid] for _, mid in rows if mid is not None]


def _consume(run: Run, topic: str) -> None:
    """The sink consumer: writes, then commits its offsets (at-least-once done right)."""
    rate = run.rates["kill_rate"]
    spec = ConsumerSpec(
        mode="write_then_commit",
        topic=topic,
        partitions=run.partitions,
        group=run.names.group(),
        table=run.names.table,
        isolation="read_committed",
        batch_size=run.batch_size,
    )
    label = "consumer[write_then_commit]"
    run.progress.step(f"{label} on {topic} (read_committed), kill rate {rate}")
    # As the other scenarios do: a rate > 0 also forces one kill early, so a small run shows it.
    kills = KillPlan(rate=rate, seed=run.seed * 1000 + 1, force_at=2 if rate > 0 else 0)
    out = supervise("recon_workload.consumer", spec.to_json(), kills, run.progress, label)
    run.faults["consumer_kills"] = [len(out.kills)]
    run.faults["consumer_starts"] = [out.starts]
