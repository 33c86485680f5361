"""Scenarios for payload consistency (``mismatched``): here, the mangling consumer.

Registered in :data:`recon_workload.registry.SCENARIOS` like the others; kept apart like the
slow consumer's, because its consumer is a process of its own (a buggy transformation, not a
delivery order).
"""

from __future__ import annotations

from recon_workload import kafka_io, sink
from recon_workload.mangler import ManglerSpec
from recon_workload.payload import PayloadPlan, pick_mangled
from recon_workload.producers import IDEMPOTENT, plan, send_all
from recon_workload.runner import Outcome, Run
from recon_workload.supervisor import KillPlan, supervise

#: The scenario's parameters: the share of the messages the consumer writes once, mangled, and
#: the share it writes twice, the second copy mangled (0: none).
MANGLING_DEFAULTS = {"mangle_fraction": 0.05, "mangled_copy_fraction": 0.02}


def mangling_consumer(run: Run) -> Outcome:
    """Idempotent producer; an at-least-once consumer (rows, then offsets; no faults) whose
    transformation cuts the payload of a seeded sample of the messages (mangle_fraction) short:
    every message delivered once, the mangled ones mismatched (in the payload field and in the
    hash of the value written), and a few more (mangled_copy_fraction) written twice, the second
    copy mangled (duplicated)."""
    names = run.names
    topic, group = names.topic(), names.group()
    messages = plan(names.run_tag, run.messages, run.seed)
    ids = [m.message_id for m in messages if m.message_id is not None]
    # Refused before anything is created: a fraction with no mangled message proves nothing.
    mangled, copies = pick_mangled(
        ids, run.rates["mangle_fraction"], run.rates["mangled_copy_fraction"], run.seed
    )
    kafka_io.create_topics(run.conf, [topic], run.partitions)
    with sink.transaction() as cur:
        sink.create_tables(cur, names.table)
    run.progress.step(f"topic {topic}; sink {names.qualified_table}")
    produced = send_all({**run.conf, **IDEMPOTENT}, topic, messages, run.progress)
    spec = ManglerSpec(
        topic=topic,
        partitions=run.partitions,
        group=group,
        table=names.table,
        mangle_ids=mangled,
        copy_ids=copies,
        batch_size=run.batch_size,
    )
    run.progress.step(
        f"consumer[mangling] on {topic}: mangles {len(mangled)} of {len(ids)},"
        f" writes {len(copies)} twice (the second copy mangled)"
    )
    label = "consumer[mangling]"
    out = supervise("recon_workload.mangler", spec.to_json(), KillPlan(), run.progress, label)
    run.faults["consumer_starts"] = [out.starts]
    run.faults["mangled"] = len(mangled)
    run.faults["mangled_copies"] = len(copies)
    truth = PayloadPlan(frozenset(mangled), frozenset(copies))
    return Outcome(topic, [topic], group, produced, payload=truth)
