"""Every scenario by name, with its fault parameters' defaults (what ``python -m recon_workload``
and the tests run). The scenario functions live in :mod:`recon_workload.scenarios` and, for the
verdicts beyond lost and duplicated, in ``scenarios_latency``, ``scenarios_payload``,
``scenarios_order``, ``scenarios_outbox``, ``scenarios_debezium`` and ``scenarios_compacted``; the
Kafka -> Kafka hops in ``scenarios_mirror`` (MirrorMaker 2) and ``scenarios_stream`` (a stream
processor)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from recon_workload.latency import HOLD_BACK_SECONDS
from recon_workload.names import RunNames
from recon_workload.runner import Outcome, Run
from recon_workload.scenarios import (
    at_least_once,
    at_most_once,
    bad_records,
    broken_exactly_once,
    concurrent_writers,
    consumer_group_rewind,
    exactly_once_idempotent_consumer,
    exactly_once_read_process_write,
    exactly_once_transactional_sink,
)
from recon_workload.scenarios_compacted import COMPACTED_DEFAULTS, compacted_changelog
from recon_workload.scenarios_debezium import DEBEZIUM_DEFAULTS, outbox_debezium
from recon_workload.scenarios_diverted import (
    DLT_DEFAULTS,
    FANOUT_DEFAULTS,
    RETRY_DEFAULTS,
    dead_letter_consumer,
    fanout_by_type,
    retry_topic_consumer,
)
from recon_workload.scenarios_latency import slow_consumer
from recon_workload.scenarios_mirror import (
    RESTART_DEFAULTS,
    RETENTION_DEFAULTS,
    mirror_target_retention,
    mirror_worker_restart,
)
from recon_workload.scenarios_mirror import cleanup as mirror_cleanup
from recon_workload.scenarios_order import ORDER_DEFAULTS, upsert_replay
from recon_workload.scenarios_outbox import (
    FIRE_AND_FORGET_DEFAULTS,
    RELAY_DEFAULTS,
    outbox_fire_and_forget,
    outbox_relay,
)
from recon_workload.scenarios_payload import MANGLING_DEFAULTS, mangling_consumer
from recon_workload.scenarios_stream import (
    STREAM_DEFAULTS,
    TO_TABLE_DEFAULTS,
    stream_processor_at_least_once,
    stream_processor_exactly_once,
    stream_processor_to_table,
)


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    defaults: dict[str, float]
    body: Callable[[Run], Outcome]
    takes_hold: bool = False  # holds a transaction open a caller can wait on (Run.hold)
    #: removes what a run left outside the project's cluster (a connector, a replica topic)
    cleanup: Callable[[RunNames], None] | None = None


def _scenario(
    body: Callable[[Run], Outcome],
    takes_hold: bool = False,
    cleanup: Callable[[RunNames], None] | None = None,
    **defaults: float,
) -> Scenario:
    doc = " ".join((body.__doc__ or "").split())
    return Scenario(body.__name__, doc, defaults, body, takes_hold, cleanup)


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        _scenario(at_most_once, kill_rate=0.15, bounce=1),
        _scenario(at_least_once, ack_loss_rate=0.15, max_ack_drops=3, kill_rate=0.15),
        _scenario(
            exactly_once_idempotent_consumer, ack_loss_rate=0.1, max_ack_drops=2, kill_rate=0.2
        ),
        _scenario(
            exactly_once_transactional_sink, ack_loss_rate=0.1, max_ack_drops=2, kill_rate=0.2
        ),
        _scenario(exactly_once_read_process_write, kill_rate=0.2, sink_kill_rate=0.1),
        _scenario(broken_exactly_once, abort_rate=0.3, txn_size=10, kill_rate=0.15),
        _scenario(consumer_group_rewind, stop_fraction=0.6, rewind_fraction=0.5, kill_rate=0.0),
        _scenario(bad_records, kill_rate=0.0),
        _scenario(concurrent_writers, takes_hold=True, hold_seconds=3, kill_rate=0.0),
        _scenario(slow_consumer, late_fraction=0.1, hold_seconds=HOLD_BACK_SECONDS),
        _scenario(mangling_consumer, False, **MANGLING_DEFAULTS),
        _scenario(upsert_replay, False, **ORDER_DEFAULTS),
        _scenario(outbox_fire_and_forget, False, **FIRE_AND_FORGET_DEFAULTS),
        _scenario(outbox_relay, False, **RELAY_DEFAULTS),
        _scenario(compacted_changelog, False, **COMPACTED_DEFAULTS),
        _scenario(outbox_debezium, True, **DEBEZIUM_DEFAULTS),
        _scenario(mirror_worker_restart, False, mirror_cleanup, **RESTART_DEFAULTS),
        _scenario(mirror_target_retention, False, mirror_cleanup, **RETENTION_DEFAULTS),
        _scenario(stream_processor_at_least_once, False, **STREAM_DEFAULTS),
        _scenario(stream_processor_exactly_once, False, **STREAM_DEFAULTS),
        _scenario(stream_processor_to_table, False, **TO_TABLE_DEFAULTS),
        _scenario(dead_letter_consumer, False, **DLT_DEFAULTS),
        _scenario(retry_topic_consumer, False, **RETRY_DEFAULTS),
        _scenario(fanout_by_type, False, **FANOUT_DEFAULTS),
    )
}
