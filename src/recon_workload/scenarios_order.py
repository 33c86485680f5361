"""Scenarios for an upsert sink's order (``out_of_order``): here, the upsert consumer whose
delayed retries overwrite newer rows.

Registered in :data:`recon_workload.registry.SCENARIOS` like the others; kept apart like the
mangling consumer's, because both its topic (keyed by account) and its sink (one row per
account) have a shape of their own.
"""

from __future__ import annotations

from recon_workload import kafka_io, sink, upsert_sink
from recon_workload.errors import WorkloadError
from recon_workload.order import OrderPlan, pick_stale, plan_keyed
from recon_workload.producers import IDEMPOTENT, send_all
from recon_workload.runner import Outcome, Run
from recon_workload.supervisor import KillPlan, supervise
from recon_workload.upsert import UpsertSpec

#: The scenario's parameters: the share of the accounts whose row a delayed retry leaves stale,
#: and how many messages (updates) each account gets.
ORDER_DEFAULTS = {"stale_fraction": 0.1, "messages_per_account": 4}


def upsert_replay(run: Run) -> Outcome:
    """Idempotent producer of a keyed topic (the Kafka key an account id, messages_per_account
    updates per account); an at-least-once consumer (rows, then offsets; no faults) upserts each
    record into one sink row per account with no version check, and for a seeded share of the
    accounts (stale_fraction) retries one older record after the account's newest was applied:
    those rows stale, each such account's newest message out_of_order, every other message
    delivered (overwritten by a later one, as upserts do, or the one its row holds)."""
    names = run.names
    topic, group = names.topic(), names.group()
    per_account = run.rates["messages_per_account"]
    if per_account != int(per_account):
        raise WorkloadError(f"messages_per_account={per_account:g}: use a whole number")
    # Refused before anything is created: a run with no stale account proves nothing.
    messages = plan_keyed(names.run_tag, run.messages, int(per_account), run.seed)
    replayed = pick_stale(messages, run.rates["stale_fraction"], run.seed)
    kafka_io.create_topics(run.conf, [topic], run.partitions)
    with sink.transaction() as cur:
        upsert_sink.create_table(cur, names.table)
    run.progress.step(f"topic {topic} (keyed by account); upsert sink {names.qualified_table}")
    produced = send_all({**run.conf, **IDEMPOTENT}, topic, messages, run.progress)
    spec = UpsertSpec(
        topic=topic,
        partitions=run.partitions,
        group=group,
        table=names.table,
        replay_ids=sorted(replayed.values()),
        batch_size=run.batch_size,
    )
    accounts = len(messages) // int(per_account)
    run.progress.step(
        f"consumer[upsert] on {topic}: {accounts} accounts, retries an older record late"
        f" for {len(replayed)}"
    )
    label = "consumer[upsert]"
    out = supervise("recon_workload.upsert", spec.to_json(), KillPlan(), run.progress, label)
    run.faults["consumer_starts"] = [out.starts]
    run.faults["accounts"] = accounts
    run.faults["replayed"] = len(replayed)
    return Outcome(topic, [topic], group, produced, order=OrderPlan(replayed))
