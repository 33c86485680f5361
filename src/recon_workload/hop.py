"""The ground truth of a Kafka -> Kafka hop (a MirrorMaker 2 replica, a stream processor): the
target topic's records are the hop's "sink rows".

Read back after the run: the source topic (``read_committed`` and ``read_uncommitted``), the
target topic (both ways too, on its own cluster), and what the hop has claimed of the source (a
processor's committed group offsets; MirrorMaker 2's source offsets stored by the Connect
worker). Then, per messageId, the rules of :mod:`recon_workload.ledger` with the target's
committed records as the sink rows, and:

- ``duplicated`` and ``delivered`` name each copy's target coordinates in ``detail``;
- a target record of an aborted transaction is no delivery (``detail`` counts them);
- a message the hop's SMT dropped on purpose is ``excluded``: the pipeline over the hop declares
  the same rule as its ``expect`` (:data:`recon_workload.scenarios_mirror.EXPECT`); without
  that declaration the product says ``lost`` for it;
- when the target's retention removed records before the run read them, a message without a
  visible copy is ``unverifiable``: nothing left in the target can prove or refute it (its
  ``detail`` names the removed copy, which the scenario read before removing it);
- ``latency_seconds`` of a delivered message: its target record's timestamp minus its source
  record's (what ``late`` will be judged by).
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

from recon_workload import kafka_io, ledger, ledger_store, sink
from recon_workload.kafka_io import Position, ReadRecord
from recon_workload.ledger import LedgerRow
from recon_workload.sink import SinkRow

if TYPE_CHECKING:
    from recon_workload.runner import Outcome, Run, ScenarioResult


@dataclass
class KafkaTarget:
    """The hop's target topic and what the scenario knows beyond a read-back.

    :param connection: the Airflow connection id of the target's cluster.
    :param conf: that cluster's client settings.
    :param claimed: the next source offset per partition the hop has claimed, when no consumer
        group of the source cluster says it (MirrorMaker 2 keeps it in the Connect worker);
        ``None``: the outcome's group's committed offsets.
    :param removed: per messageId, the target copies the scenario removed by retention
        (``delete_records``) before the run, as it read them just before.
    :param filtered: the messageIds the hop's SMT dropped on purpose.
    """

    connection: str
    conf: dict[str, Any]
    topic: str
    claimed: dict[int, int] | None = None
    removed: dict[str, list[Position]] = field(default_factory=dict)
    filtered: set[str] = field(default_factory=set)

    @property
    def label(self) -> str:
        """What ``workload.runs.sink_table`` says for a Kafka target."""
        return f"kafka:{self.connection}/{self.topic}"


def log_starts(conf: dict[str, Any], topic: str, partitions: int) -> dict[int, int]:
    """The first offset each partition still holds (above 0: records were removed)."""
    admin = AdminClient(kafka_io.quiet(conf))
    asked = {TopicPartition(topic, p): OffsetSpec.earliest() for p in range(partitions)}
    found = admin.list_offsets(asked, request_timeout=30)
    return {tp.partition: f.result(timeout=30).offset for tp, f in found.items()}


def as_sink_rows(records: list[ReadRecord]) -> list[SinkRow]:
    """The target's records as the ledger's sink rows (their coordinates are the target's)."""
    rows = []
    for r in records:
        p = r.position
        rows.append(SinkRow.of(r.message_id, p.topic, p.partition, p.offset, r.value))
    return rows


def _where(positions: list[Position]) -> str:
    return ", ".join(f"{p.topic}[{p.partition}]@{p.offset}" for p in positions)


def build(
    produced: list[ledger.Produced],
    source_rc: list[ReadRecord],
    source_ru: list[ReadRecord],
    target_rc: list[ReadRecord],
    target_ru: list[ReadRecord],
    claimed: dict[int, int | None],
    target: KafkaTarget,
    target_removed: bool,
) -> list[LedgerRow]:
    """One ledger row per message of the hop (see the module's rules).

    :param claimed: the next source offset per partition the hop has claimed.
    :param target_removed: the target's retention removed records before the run read them.
    """
    rows = ledger.build(produced, source_rc, source_ru, as_sink_rows(target_rc), claimed)
    copies: dict[str, list[Position]] = defaultdict(list)
    for r in target_rc:
        if r.message_id is not None:
            copies[r.message_id].append(r.position)
    committed = {r.position for r in target_rc}
    aborted: dict[str, int] = defaultdict(int)
    for r in target_ru:
        if r.position not in committed and r.message_id is not None:
            aborted[r.message_id] += 1
    source_ts = {r.message_id: r.timestamp_ms for r in source_rc if r.message_id is not None}
    target_ts = {r.message_id: r.timestamp_ms for r in target_rc if r.message_id is not None}
    for row in rows:
        mid = row.message_id
        if mid is None:
            continue
        notes = []
        if row.expected_verdict in ("delivered", "duplicated"):
            notes.append(f"target copies: {_where(copies[mid])}")
        if row.expected_verdict == "delivered":
            src, tgt = source_ts.get(mid), target_ts.get(mid)
            if src is not None and tgt is not None:
                row.latency_seconds = (tgt - src) / 1000.0
        if row.expected_verdict == "lost" and target_removed:
            row.expected_verdict = "unverifiable"
            gone = target.removed.get(mid)
            notes.append(
                f"its copy at {_where(gone)} was removed by the target's retention"
                if gone
                else "no copy left, and the target's retention removed records before the run"
            )
        elif row.expected_verdict == "lost" and mid in target.filtered:
            row.expected_verdict = "excluded"
            notes.append("dropped by the hop's SMT filter (lost without the pipeline's expect)")
        if aborted.get(mid):
            notes.append(
                f"{aborted[mid]} aborted cop{'y' if aborted[mid] == 1 else 'ies'} in the target"
            )
        if notes:
            row.detail = "; ".join(([row.detail] if row.detail else []) + notes)
    return rows


def finish(run: Run, outcome: Outcome, started: float) -> ScenarioResult:
    """Read back both topics, build and store the hop's ledger, and summarise the run."""
    from recon_workload.runner import ScenarioResult

    target = outcome.target
    assert target is not None
    progress, names = run.progress, run.names
    progress.step(f"reading back {outcome.topic} and {target.label} (both isolation levels)")
    source_rc = kafka_io.scan_topic(run.conf, outcome.topic, run.partitions, "read_committed")
    source_ru = kafka_io.scan_topic(run.conf, outcome.topic, run.partitions, "read_uncommitted")
    target_rc = kafka_io.scan_topic(target.conf, target.topic, run.partitions, "read_committed")
    target_ru = kafka_io.scan_topic(target.conf, target.topic, run.partitions, "read_uncommitted")
    starts = log_starts(target.conf, target.topic, run.partitions)
    removed = any(o > 0 for o in starts.values())
    claimed: dict[int, int | None]
    if target.claimed is not None:
        claimed = {p: target.claimed.get(p) for p in range(run.partitions)}
    else:
        claimed = kafka_io.committed_offsets(run.conf, outcome.group, outcome.topic, run.partitions)
    entries = build(
        outcome.produced, source_rc, source_ru, target_rc, target_ru, claimed, target, removed
    )
    summary = ledger.summarize(
        entries, len(outcome.produced), len(source_rc), len(target_rc), compacted=removed
    )
    line = summary.line(names.scenario_run)
    run.faults["claimed_offsets"] = {str(p): o for p, o in sorted(claimed.items())}
    run.faults["target_log_starts"] = {str(p): o for p, o in sorted(starts.items())}
    run.faults["target_aborted_records"] = len(target_ru) - len(target_rc)
    params = {"messages": run.messages, "partitions": run.partitions, "seed": run.seed}
    with sink.transaction() as cur:
        ledger_store.store(
            cur,
            {
                "scenario_run": names.scenario_run,
                "scenario": names.scenario,
                "topic": outcome.topic,
                "topics": outcome.topics,
                "sink_table": target.label,
                "consumer_group": outcome.group,
                "params": {**params, **run.rates},
                "summary": {**summary.as_json(), "faults": run.faults, "target": target.label},
                "summary_line": line,
            },
            entries,
        )
    return ScenarioResult(
        scenario_run=names.scenario_run,
        scenario=names.scenario,
        topic=outcome.topic,
        sink_table=target.label,
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
    )
