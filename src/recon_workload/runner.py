"""Running one scenario end to end: reset, set up, break things, read back, write the ledger."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

from recon_workload import (
    kafka_io,
    ledger,
    ledger_store,
    sink,
    upsert,
    upsert_sink,
)
from recon_workload.diverting import dead_letter_topic, retry_topics
from recon_workload.errors import WorkloadError
from recon_workload.hold import HoldGate
from recon_workload.hop import KafkaTarget
from recon_workload.judges import judge_latency, judge_order, judge_payload
from recon_workload.latency import LatencyPlan
from recon_workload.ledger import Produced
from recon_workload.names import RunNames, new_run_tag
from recon_workload.order import OrderPlan
from recon_workload.payload import PayloadPlan
from recon_workload.progress import Progress


@dataclass
class Run:
    """Everything a scenario function needs about its run.

    :param faults: filled in by the scenario with what it actually injected (kills, dropped
        acks, aborted transactions, bounce time), stored in the run's summary.
    :param hold: the caller's gate on a transaction the scenario holds open (only scenarios
        that hold one take it).
    """

    names: RunNames
    messages: int
    partitions: int
    seed: int
    rates: dict[str, float]
    conf: dict[str, Any]
    progress: Progress
    faults: dict[str, Any] = field(default_factory=dict)
    hold: HoldGate | None = None

    @property
    def batch_size(self) -> int:
        # Small runs still get several batches, hence several crash windows to choose from.
        return max(1, min(20, self.messages // 10))


@dataclass
class Outcome:
    """What a scenario function hands back for the ledger.

    :param topic: the topic the sink consumer reads (the ledger's positions are in it).
    :param topics: every topic the run created.
    :param group: the sink consumer's group (its committed offsets judge pending).
    :param latency: the latency bound the run is designed around (the slow consumer); the
        runner then measures every delivered message's latency and judges ``late``.
    :param payload: the messages the run's consumer mangled (the mangling consumer); the runner
        then compares every delivered message's sink row with its record and judges
        ``mismatched``.
    :param order: the accounts whose upsert row the run's consumer left stale (the upsert
        consumer); the runner then reads the sink as an upsert sink (one row per key) and
        judges every committed message per key: ``out_of_order``, ``delivered`` or ``lost``.
    :param source_table: the run's source, ``schema.table`` of the outbox its relay publishes
        from (the outbox scenarios); the runner then reads its messageIds and judges
        ``unpublished`` each one neither committed in the topic nor in the sink.
    """

    topic: str
    topics: list[str]
    group: str
    produced: list[Produced]
    latency: LatencyPlan | None = None
    payload: PayloadPlan | None = None
    order: OrderPlan | None = None
    source_table: str | None = None
    #: the source's messageIds, when its table no longer holds them (outbox rows deleted right
    #: after insert: what the application committed); None: read ``source_table``.
    source_ids: list[str] | None = None
    #: the topic is compacted (``cleanup.policy=compact``) and the scenario waited for the log
    #: cleaner: an acknowledged record missing from it was compacted away.
    compacted: bool = False
    #: a Kafka -> Kafka hop (MirrorMaker 2, a stream processor): its target topic's records are
    #: the sink rows and :func:`recon_workload.hop.finish` builds the ledger (``topic`` is the
    #: hop's source).
    target: KafkaTarget | None = None
    #: the run's dead-letter and retry topics (the diverting consumers): a lost message whose
    #: record is read back from one is ``diverted`` (``scenarios_diverted.judge_diverted``).
    diverted_topics: list[str] = field(default_factory=list)
    #: the JSON ``type`` the run's sink holds (the fan-out consumer): a message of another type
    #: is ``excluded`` (``scenarios_diverted.judge_excluded``); None: every record is expected.
    expected_type: str | None = None


@dataclass
class ScenarioResult:
    """What one run did, as counted in its ledger.

    :param counts: expected-verdict counts, every verdict present (0 when none).
    :param summary: the one-line summary.
    :param late_bound_seconds: the ``latency.max_seconds`` the ``late`` verdicts hold for, in a
        run designed around one (``None``: no message is judged late); a pipeline that declares
        no bound says ``delivered`` for them.
    :param late_ids: the messageIds expected ``late`` (sorted).
    :param time_column: the sink column holding each row's write time.
    :param payload_fields: in a run that compares payloads, the JSON fields of the record value
        ``mismatched`` holds for, each with the sink column it lands in (empty: no message is
        judged mismatched; a pipeline that declares no ``payload`` says ``delivered`` for them).
    :param sha256_column: the sink column with the hex SHA-256 of the value a row was written
        from (``mismatched`` holds for ``payload.sha256_column`` too).
    :param mismatched_ids: the messageIds expected ``mismatched`` (sorted).
    :param mangled_copy_ids: the messageIds expected ``duplicated`` whose later copy differs
        from the record (sorted).
    :param order_columns: in a run over an upsert sink, its key column and position column
        (``order.key_column``, ``order.position_column``; empty: no message is judged
        out_of_order); the positions are the records' Kafka offsets.
    :param out_of_order_ids: the messageIds expected ``out_of_order`` (sorted).
    :param stale_keys: per key whose row holds an older record than its newest: ``newest``,
        ``newest_id``, ``held`` and ``held_id`` (positions and messageIds).
    :param source_table: in a run with a source, ``schema.table`` of its outbox (what a
        pipeline's ``source:`` names; ``None``: no message is judged unpublished).
    :param unpublished_ids: the messageIds expected ``unpublished`` (sorted).
    """

    scenario_run: str
    scenario: str
    topic: str
    sink_table: str
    consumer_group: str
    counts: dict[str, int]
    summary: str
    topics: list[str] = field(default_factory=list)
    produced: int = 0
    committed_in_topic: int = 0
    sink_rows: int = 0
    topic_duplicates: int = 0
    unseen_by_product: int = 0
    faults: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    late_bound_seconds: float | None = None
    late_ids: list[str] = field(default_factory=list)
    time_column: str = sink.TIME_COLUMN
    payload_fields: dict[str, str] = field(default_factory=dict)
    sha256_column: str = sink.SHA256_COLUMN
    mismatched_ids: list[str] = field(default_factory=list)
    mangled_copy_ids: list[str] = field(default_factory=list)
    order_columns: dict[str, str] = field(default_factory=dict)
    out_of_order_ids: list[str] = field(default_factory=list)
    stale_keys: dict[str, dict[str, Any]] = field(default_factory=dict)
    source_table: str | None = None
    unpublished_ids: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def reset(names: RunNames, conf: dict[str, Any]) -> None:
    """Remove whatever an earlier run with the same tag left, so a re-run replaces it."""
    topic = names.topic()
    # The diverting consumers' dead-letter and retry topics too: a re-run creates them anew.
    kafka_io.delete_topics(
        conf, [topic, names.topic("in"), dead_letter_topic(topic), *retry_topics(topic)]
    )
    kafka_io.delete_groups(conf, [names.group(), names.group("processor"), names.group("retry")])
    with sink.transaction() as cur:
        sink.drop_tables(cur, names.table)
        ledger_store.ensure_schema(cur)
        cur.execute("DELETE FROM workload.ledger WHERE scenario_run = %s", (names.scenario_run,))
        cur.execute("DELETE FROM workload.runs WHERE scenario_run = %s", (names.scenario_run,))


def make_run(
    scenario: str,
    messages: int,
    partitions: int,
    seed: int,
    run_tag: str | None,
    rates: dict[str, float],
    show_progress: bool,
    hold: HoldGate | None = None,
) -> Run:
    """Validate the parameters and build the run context.

    :raises WorkloadError: on a size or name that cannot work.
    """
    if messages < 10:
        raise WorkloadError(f"messages={messages}: need at least 10 for the faults to show")
    if not 1 <= partitions <= 64:
        raise WorkloadError(f"partitions={partitions}: use 1 to 64")
    names = RunNames(scenario, run_tag or new_run_tag())
    progress = Progress(names.scenario_run, enabled=show_progress)
    conf = kafka_io.base_config()
    return Run(names, messages, partitions, seed, rates, conf, progress, hold=hold)


def finish(run: Run, outcome: Outcome, started: float) -> ScenarioResult:
    """Read back Kafka and PostgreSQL, build and store the ledger, and summarise the run."""
    if outcome.target is not None:
        from recon_workload import hop

        return hop.finish(run, outcome, started)
    progress, names = run.progress, run.names
    progress.step("reading back the topic (read_committed, read_uncommitted) and the sink")
    rc = kafka_io.scan_topic(run.conf, outcome.topic, run.partitions, "read_committed")
    ru = kafka_io.scan_topic(run.conf, outcome.topic, run.partitions, "read_uncommitted")
    offsets = kafka_io.committed_offsets(run.conf, outcome.group, outcome.topic, run.partitions)
    upserts: list[upsert_sink.UpsertRow] = []
    with sink.transaction() as cur:
        if outcome.order is None:
            rows = sink.read_rows(cur, names.table)
        else:  # one row per key: each counts as one row of the messageId it names
            upserts = upsert_sink.read_rows(cur, names.table)
            rows = [u.as_sink_row(outcome.topic) for u in upserts]
        source = None
        if outcome.source_ids is not None:
            source = set(outcome.source_ids)
        elif outcome.source_table is not None:
            outbox = sink.read_outbox(cur, outcome.source_table)
            source = {mid for _, mid in outbox if mid is not None}
    entries = ledger.build(outcome.produced, rc, ru, rows, offsets, source, outcome.compacted)
    if outcome.diverted_topics or outcome.expected_type is not None:
        from recon_workload import scenarios_diverted as sd

        dead = [
            r
            for t in outcome.diverted_topics
            for r in kafka_io.scan_topic(run.conf, t, run.partitions, "read_committed")
        ]
        run.faults["diverted"] = sd.judge_diverted(entries, dead)
        if outcome.expected_type is not None:
            run.faults["excluded"] = sd.judge_excluded(entries, rc, outcome.expected_type)
    late: set[str] = set()
    bound = None
    if outcome.latency is not None:
        bound = outcome.latency.design.bound
        late = judge_latency(outcome.latency, entries, rc, rows, run.faults)
    mismatched: list[str] = []
    compared = None
    if outcome.payload is not None:
        compared = list(outcome.payload.fields)
        mismatched = judge_payload(outcome.payload, entries, rc, rows, run.faults)
    stale: dict[str, dict[str, Any]] = {}
    columns = None
    if outcome.order is not None:
        columns = (outcome.order.key_column, outcome.order.position_column)
        keys = upsert.read_keys(outcome.topic, run.partitions)
        stale = judge_order(outcome.order, entries, rc, keys, upserts, run.faults)
    summary = ledger.summarize(
        entries,
        len(outcome.produced),
        len(rc),
        len(rows),
        bound,
        compared,
        columns,
        outcome.source_table,
        outcome.compacted,
    )
    unpublished = [e.message_id for e in entries if e.expected_verdict == "unpublished"]
    line = summary.line(names.scenario_run)
    run.faults["group_committed_offsets"] = {str(p): o for p, o in sorted(offsets.items())}
    params = {"messages": run.messages, "partitions": run.partitions, "seed": run.seed}
    with sink.transaction() as cur:
        ledger_store.store(
            cur,
            {
                "scenario_run": names.scenario_run,
                "scenario": names.scenario,
                "topic": outcome.topic,
                "topics": outcome.topics,
                "sink_table": names.qualified_table,
                "consumer_group": outcome.group,
                "params": {**params, **run.rates},
                "summary": {**summary.as_json(), "faults": run.faults},
                "summary_line": line,
            },
            entries,
        )
    return ScenarioResult(
        scenario_run=names.scenario_run,
        scenario=names.scenario,
        topic=outcome.topic,
        sink_table=names.qualified_table,
        consumer_group=outcome.group,
        counts=summary.counts,
        summary=line,
        topics=outcome.topics,
        produced=summary.produced,
        committed_in_topic=summary.committed_in_topic,
        sink_rows=summary.sink_rows,
        topic_duplicates=summary.topic_duplicates,
        unseen_by_product=summary.unseen,
        faults=run.faults,
        seconds=round(time.monotonic() - started, 1),
        late_bound_seconds=bound,
        late_ids=sorted(late),
        payload_fields=dict(outcome.payload.fields) if outcome.payload else {},
        mismatched_ids=mismatched,
        mangled_copy_ids=sorted(outcome.payload.mangled_copies) if outcome.payload else [],
        order_columns=dict(zip(("key", "position"), columns, strict=True)) if columns else {},
        out_of_order_ids=sorted(s["newest_id"] for s in stale.values()),
        stale_keys=stale,
        source_table=outcome.source_table,
        unpublished_ids=sorted(m for m in unpublished if m is not None),
    )
