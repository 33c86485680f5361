"""Scenarios for the verdicts beyond lost and duplicated: here, the slow consumer (``late``).

Registered in :data:`recon_workload.registry.SCENARIOS` like the others; kept apart because
they need a consumer that is fetching before the producer starts (latency is counted from the
record's Kafka timestamp, so a consumer that starts late makes every message late).
"""

from __future__ import annotations

import threading

from recon_workload import kafka_io, sink
from recon_workload.errors import WorkloadError
from recon_workload.latency import LATE_MIN_SECONDS, LatencyDesign, LatencyPlan, pick_held_back
from recon_workload.producers import IDEMPOTENT, connected_producer, plan, send_all
from recon_workload.runner import Outcome, Run
from recon_workload.slow_consumer import SlowConsumerSpec
from recon_workload.supervisor import KillPlan, Supervised, supervise

# Generous: the stage lasts about hold_seconds plus the production; this only stops a hung one.
STAGE_TIMEOUT_SECONDS = 90.0


def slow_consumer(run: Run) -> Outcome:
    """Idempotent producer; an at-least-once consumer (rows, then offsets; no faults) that
    parks a seeded sample of the messages (late_fraction) and writes each hold_seconds after its
    Kafka timestamp, the rest at once: every message delivered once, the parked ones late for a
    2 s latency bound (written_at minus the Kafka timestamp)."""
    names = run.names
    topic, group = names.topic(), names.group()
    hold = run.rates["hold_seconds"]
    if hold < LATE_MIN_SECONDS:
        raise WorkloadError(
            f"slow_consumer: hold_seconds={hold:g} must be at least {LATE_MIN_SECONDS:g}, "
            "or held-back messages land too near the latency bound"
        )
    kafka_io.create_topics(run.conf, [topic], run.partitions)
    with sink.transaction() as cur:
        sink.create_tables(cur, names.table)
    run.progress.step(f"topic {topic}; sink {names.qualified_table}")
    messages = plan(names.run_tag, run.messages, run.seed)
    ids = [m.message_id for m in messages if m.message_id is not None]
    held = pick_held_back(ids, run.rates["late_fraction"], run.seed)
    spec = SlowConsumerSpec(
        topic=topic,
        partitions=run.partitions,
        group=group,
        table=names.table,
        expect=len(messages),
        delay_ids=held,
        delay_seconds=hold,
        batch_size=run.batch_size,
    )
    # Connects while the consumer starts: an on-time message must not wait for the producer.
    producer = connected_producer({**run.conf, **IDEMPOTENT}, topic)
    stage = _Stage(run, spec)
    stage.start()
    stage.ready.wait()  # set by READY, or by the stage failing (supervise's own timeout)
    if stage.failed:
        stage.finish()  # raises what went wrong
    run.progress.step(f"consumer fetching; producing {len(messages)}, {len(held)} to hold back")
    produced = send_all(run.conf, topic, messages, run.progress, pause_every=10, producer=producer)
    out = stage.finish()
    run.faults["consumer_starts"] = [out.starts]
    run.faults["held_back"] = len(held)
    run.faults["hold_seconds"] = hold
    latency = LatencyPlan(LatencyDesign(), frozenset(held), hold)
    return Outcome(topic, [topic], group, produced, latency)


class _Stage:
    """The consumer process, supervised in a thread so the scenario can produce meanwhile."""

    def __init__(self, run: Run, spec: SlowConsumerSpec) -> None:
        self.run, self.spec = run, spec
        self.ready = threading.Event()
        self.failed: list[BaseException] = []
        self.out = Supervised()
        self.thread = threading.Thread(target=self._body, name="slow_consumer", daemon=True)

    def start(self) -> None:
        spec = self.spec
        self.run.progress.step(
            f"consumer[slow] on {spec.topic}: holds {len(spec.delay_ids)} of {spec.expect}"
            f" back {spec.delay_seconds:g} s"
        )
        self.thread.start()

    def _body(self) -> None:
        try:
            self.out = supervise(
                "recon_workload.slow_consumer",
                self.spec.to_json(),
                # No kills: a restart's pause would land on-time messages near the bound.
                KillPlan(),
                self.run.progress,
                "consumer[slow]",
                timeout=STAGE_TIMEOUT_SECONDS,
                on_ready=self.ready.set,
            )
        except BaseException as exc:  # re-raised in the scenario's thread by finish()
            self.failed.append(exc)
        finally:
            self.ready.set()  # a consumer that failed must not keep the scenario waiting

    def finish(self) -> Supervised:
        """Wait for the consumer to end; re-raise its failure."""
        self.thread.join()
        if self.failed:
            raise self.failed[0]
        return self.out
