"""The scenarios: each keeps or breaks a delivery promise the way real pipelines do.

Every scenario function sets up its topic(s) and sink, produces, consumes (in killable child
processes) and returns an :class:`~recon_workload.runner.Outcome`; the runner then reads back
what actually happened and writes the ledger. Fault parameters are per scenario (see
:data:`recon_workload.registry.SCENARIOS`); a rate > 0 also forces one fault early, so a small
run always shows it.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka.admin import AdminClient

from recon_workload import kafka_io, sink
from recon_workload.consumer import ConsumerSpec
from recon_workload.errors import WorkloadError
from recon_workload.ledger import Produced
from recon_workload.messages import BAD_KINDS, Message
from recon_workload.processor import ProcessorSpec
from recon_workload.producers import (
    AT_LEAST_ONCE,
    FIRE_AND_FORGET,
    IDEMPOTENT,
    plan,
    send_across_bounce,
    send_all,
    send_transactions,
)
from recon_workload.proxy import DropPolicy, FaultProxy
from recon_workload.runner import Outcome, Run
from recon_workload.supervisor import KillPlan, Supervised, supervise


def _setup(run: Run, topics: list[str], aux: tuple[str, ...] = ()) -> None:
    kafka_io.create_topics(run.conf, topics, run.partitions)
    with sink.transaction() as cur:
        sink.create_tables(cur, run.names.table, aux)
    run.progress.step(f"topics {', '.join(topics)}; sink {run.names.qualified_table}")


def _kill_plan(run: Run, rate: float, stage: int) -> KillPlan:
    # Each stage draws from its own seeded stream, so adding a stage does not shift the others.
    return KillPlan(rate=rate, seed=run.seed * 1000 + stage, force_at=2 if rate > 0 else 0)


def _consume(
    run: Run,
    mode: str,
    topic: str,
    kill_rate: float,
    stage: int = 1,
    isolation: str = "read_committed",
    stop_after: int | None = None,
    *,
    member: str = "",
    assigned: list[int] | None = None,
    hold_transactions: int = 0,
    on_hold: Callable[[], None] | None = None,
    timeout: float = 120.0,
) -> Supervised:
    """Run one consumer process (one group member) to the end under a kill plan.

    :param member: names the member in progress lines when the group has several.
    :param assigned, hold_transactions: see :class:`ConsumerSpec`; ``on_hold`` decides when a
        held transaction may commit (see :func:`supervise`).
    """
    spec = ConsumerSpec(
        mode=mode,
        topic=topic,
        partitions=run.partitions,
        group=run.names.group(),
        table=run.names.table,
        isolation=isolation,
        batch_size=run.batch_size,
        stop_after=stop_after,
        assigned=assigned,
        hold_transactions=hold_transactions,
    )
    label = f"consumer[{mode}{' ' + member if member else ''}]"
    reads = "" if assigned is None else f" partitions {assigned}"
    run.progress.step(f"{label} on {topic}{reads} ({isolation}), kill rate {kill_rate}")
    out = supervise(
        "recon_workload.consumer",
        spec.to_json(),
        _kill_plan(run, kill_rate, stage),
        run.progress,
        label,
        timeout=timeout,
        on_hold=on_hold,
    )
    run.faults.setdefault("consumer_kills", []).append(len(out.kills))
    run.faults.setdefault("consumer_starts", []).append(out.starts)
    return out


def _through_proxy(run: Run, producer_conf: dict[str, Any], topic: str) -> list[Any]:
    """Produce every message through the ack-dropping proxy."""
    rate = run.rates["ack_loss_rate"]
    policy = DropPolicy(
        rate=rate,
        seed=run.seed,
        force_nth=2 if rate > 0 else 0,
        max_drops=int(run.rates["max_ack_drops"]),
    )
    messages = plan(run.names.run_tag, run.messages, run.seed)
    with FaultProxy.from_env(policy) as proxy:
        run.progress.step(f"producing through the proxy at {proxy.bootstrap}, ack loss {rate}")
        conf = {**run.conf, **producer_conf, "bootstrap.servers": proxy.bootstrap}
        produced = send_all(conf, topic, messages, run.progress, pause_every=10)
    run.faults["acks_dropped"] = len(policy.dropped)
    run.faults["produce_responses_seen"] = policy.seen
    return produced


def fire_and_forget(run: Run, topic: str, messages: Sequence[Message]) -> list[Produced]:
    """Send ``messages`` with acks=0 and no retries, across a real broker bounce when the run's
    ``bounce`` rate says so; what reached the dying broker is gone, yet counts as sent."""
    if run.rates["bounce"]:
        produced, took = send_across_bounce(run.conf, topic, messages, run.progress)
        run.faults["broker_bounce_seconds"] = round(took, 1)
    else:
        produced = send_all({**run.conf, **FIRE_AND_FORGET}, topic, messages, run.progress)
    run.faults["producer_failures"] = sum(p.acked is False for p in produced)
    return produced


def at_most_once(run: Run) -> Outcome:
    """acks=0, no retries, broker bounced mid-stream; consumer commits, then writes, and dies
    in between."""
    topic = run.names.topic()
    _setup(run, [topic])
    produced = fire_and_forget(run, topic, plan(run.names.run_tag, run.messages, run.seed))
    _consume(run, "commit_then_write", topic, run.rates["kill_rate"])
    return Outcome(topic, [topic], run.names.group(), produced)


def at_least_once(run: Run) -> Outcome:
    """acks=all with retries, no idempotence, acks lost in the proxy; consumer writes, then
    commits, and dies in between."""
    topic = run.names.topic()
    _setup(run, [topic])
    produced = _through_proxy(run, AT_LEAST_ONCE, topic)
    _consume(run, "write_then_commit", topic, run.rates["kill_rate"])
    return Outcome(topic, [topic], run.names.group(), produced)


def exactly_once_idempotent_consumer(run: Run) -> Outcome:
    """Idempotent producer (acks lost in the proxy: the broker de-duplicates the re-sends);
    the consumer skips messageIds it recorded in the same transaction as the row."""
    topic = run.names.topic()
    _setup(run, [topic], ("processed",))
    produced = _through_proxy(run, IDEMPOTENT, topic)
    _consume(run, "idempotent", topic, run.rates["kill_rate"])
    return Outcome(topic, [topic], run.names.group(), produced)


def exactly_once_transactional_sink(run: Run) -> Outcome:
    """Idempotent producer; the consumer stores rows and offsets in one PostgreSQL transaction
    and resumes from the stored offsets."""
    topic = run.names.topic()
    _setup(run, [topic], ("offsets",))
    produced = _through_proxy(run, IDEMPOTENT, topic)
    _consume(run, "transactional_sink", topic, run.rates["kill_rate"])
    return Outcome(topic, [topic], run.names.group(), produced)


def exactly_once_read_process_write(run: Run) -> Outcome:
    """Input -> transactional copy with send_offsets_to_transaction (killed mid-transaction, so
    the output holds aborted records) -> read_committed transactional sink."""
    names = run.names
    source, topic = names.topic("in"), names.topic()
    _setup(run, [source, topic], ("offsets",))
    messages = plan(names.run_tag, run.messages, run.seed)
    produced = send_all({**run.conf, **IDEMPOTENT}, source, messages, run.progress)
    spec = ProcessorSpec(
        input_topic=source,
        output_topic=topic,
        partitions=run.partitions,
        group=names.group("processor"),
        transactional_id=f"{names.group()}-processor",
        batch_size=run.batch_size,
    )
    run.progress.step(f"processor {source} -> {topic}, kill rate {run.rates['kill_rate']}")
    stage = supervise(
        "recon_workload.processor",
        spec.to_json(),
        _kill_plan(run, run.rates["kill_rate"], 0),
        run.progress,
        "processor",
    )
    run.faults["processor_kills_mid_transaction"] = len(stage.kills)
    _consume(run, "transactional_sink", topic, run.rates["sink_kill_rate"])
    return Outcome(topic, [source, topic], names.group(), produced)


def broken_exactly_once(run: Run) -> Outcome:
    """Transactional producer that aborts some transactions; the consumer reads
    read_uncommitted and commits before writing (aborted reads, and losses when killed)."""
    names = run.names
    topic = names.topic()
    _setup(run, [topic])
    messages = plan(names.run_tag, run.messages, run.seed)
    rng = random.Random(run.seed * 1000 + 7)
    rate = run.rates["abort_rate"]
    aborted_so_far: list[int] = []

    def abort(t: int) -> bool:
        decide = rng.random() < rate or (rate > 0 and t == 1 and not aborted_so_far)
        if decide:
            aborted_so_far.append(t)
        return decide

    produced, aborted = send_transactions(
        run.conf,
        topic,
        messages,
        f"{names.group()}-producer",
        int(run.rates["txn_size"]),
        abort,
        run.progress,
    )
    run.faults["aborted_transactions"] = len(aborted)
    _consume(run, "commit_then_write", topic, run.rates["kill_rate"], isolation="read_uncommitted")
    return Outcome(topic, [topic], names.group(), produced)


def consumer_group_rewind(run: Run) -> Outcome:
    """The consumer stops part-way; its group's offsets are reset backwards (the group is
    empty); it resumes and writes the rewound records again."""
    names = run.names
    topic, group = names.topic(), names.group()
    _setup(run, [topic])
    messages = plan(names.run_tag, run.messages, run.seed)
    produced = send_all({**run.conf, **IDEMPOTENT}, topic, messages, run.progress)
    first = int(run.messages * run.rates["stop_fraction"])
    _consume(run, "write_then_commit", topic, run.rates["kill_rate"], 1, stop_after=first)

    committed = kafka_io.committed_offsets(run.conf, group, topic, run.partitions)
    back = run.rates["rewind_fraction"]
    target = {(topic, p): o - int(o * back) for p, o in committed.items() if o}
    state = _group_state(run.conf, group)
    run.progress.step(f"group {group} is {state}; rewinding {committed} -> {target}")
    kafka_io.alter_offsets(run.conf, group, target)
    run.faults["group_state_at_rewind"] = state
    run.faults["rewound"] = {f"{t}[{p}]": [committed[p], o] for (t, p), o in target.items()}
    _consume(run, "write_then_commit", topic, run.rates["kill_rate"], 2)
    return Outcome(topic, [topic], group, produced)


def _group_state(conf: dict[str, Any], group: str) -> str:
    admin = AdminClient(kafka_io.quiet(conf))
    described = admin.describe_consumer_groups([group])[group].result(timeout=30)
    return str(described.state.name).lower()


def bad_records(run: Run) -> Outcome:
    """Good messages plus a record with no id at all, a non-UTF-8 value, a tombstone and an
    oversize value (> 900 KB); the consumer writes what it got."""
    topic = run.names.topic()
    _setup(run, [topic])
    messages = plan(run.names.run_tag, run.messages, run.seed, BAD_KINDS)
    produced = send_all({**run.conf, **IDEMPOTENT}, topic, messages, run.progress)
    _consume(run, "write_then_commit", topic, run.rates["kill_rate"])
    return Outcome(topic, [topic], run.names.group(), produced)


def concurrent_writers(run: Run) -> Outcome:
    """Two members of one consumer group (each its own partitions) write into the same sink
    table and commit their offsets after their sink transaction (at-least-once done right). The
    slow member holds its first sink transaction open (rows inserted, ids taken) while the fast
    one inserts and commits all of its rows, so the ingest sequence differs from commit order."""
    names = run.names
    topic, group = names.topic(), names.group()
    if run.partitions < 2:
        raise WorkloadError("concurrent_writers: partitions must be 2 or more (one per member)")
    _setup(run, [topic])
    messages = plan(names.run_tag, run.messages, run.seed)
    produced = send_all({**run.conf, **IDEMPOTENT}, topic, messages, run.progress)
    half = max(1, run.partitions // 2)
    slow, fast = list(range(half)), list(range(half, run.partitions))
    hold = _LongTransaction(run)
    extra = run.rates["hold_seconds"] + (run.hold.timeout if run.hold is not None else 0.0)

    failed: list[BaseException] = []

    def slow_member() -> None:
        try:
            _consume(
                run,
                "write_then_commit",
                topic,
                run.rates["kill_rate"],
                1,
                member="slow",
                assigned=slow,
                hold_transactions=1,
                on_hold=hold.wait,
                timeout=120.0 + extra,
            )
        except BaseException as exc:  # re-raised in the scenario's thread
            failed.append(exc)
        finally:
            hold.opened.set()  # a member that never held must not keep the other waiting

    thread = threading.Thread(target=slow_member, name="concurrent_writers-slow", daemon=True)
    thread.start()
    hold.opened.wait()
    try:
        kill_rate = run.rates["kill_rate"]
        _consume(run, "write_then_commit", topic, kill_rate, 2, member="fast", assigned=fast)
    finally:
        hold.other_done.set()
        thread.join()
    if failed:
        raise failed[0]
    with sink.transaction() as cur:
        seen = sink.visible_by_partition(cur, names.table)
    first_slow_id = min((seen[p][1] for p in slow if p in seen), default=None)
    during = run.faults.get("visible_during_hold", {})
    run.faults["members"] = {"slow": slow, "fast": fast}
    run.faults["ingest_order_differs_from_commit_order"] = (
        first_slow_id is not None and first_slow_id < during.get("max_id", 0)
    )
    return Outcome(topic, [topic], group, produced)


class _LongTransaction:
    """The slow member's held transactions: the first stays open until the fast member has
    committed everything, ``hold_seconds`` have passed and the caller's gate (if any) opens; a
    restarted process's first transaction is held ``hold_seconds`` again."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.opened = threading.Event()
        self.other_done = threading.Event()
        self.holds = 0

    def wait(self) -> None:
        run, started = self.run, time.monotonic()
        self.holds += 1
        first = self.holds == 1
        if first:
            run.progress.step("slow member: sink transaction open; the fast member starts")
            self.opened.set()
            self.other_done.wait()
            with sink.transaction() as cur:
                seen = sink.visible_by_partition(cur, run.names.table)
            run.faults["visible_during_hold"] = {
                "rows": sum(n for n, _, _ in seen.values()),
                "partitions": sorted(seen),
                "max_id": max((hi for _, _, hi in seen.values()), default=0),
            }
        time.sleep(max(0.0, run.rates["hold_seconds"] - (time.monotonic() - started)))
        if first and run.hold is not None:
            run.progress.step(
                "slow member: transaction held open; waiting for the caller's release"
                + (f" (create {run.hold.release_file})" if run.hold.release_file else "")
            )
            run.faults["hold_released"] = run.hold.hold()
        run.faults.setdefault("held_seconds", []).append(round(time.monotonic() - started, 1))
