"""A run's plan: what a run knows before it reads a record, resolved once.

:func:`resolve_plan` asks each service its question once — the results store where the pipeline
stands, the sink's catalog for the table (and its ingest sequence for the sink's position),
Kafka for the topic's partitions, offsets, cleanup policy and the group's commits — and plans
each partition's window from them. Step 1 (``recon.run.steps.snapshot_offsets``) records exactly
this plan; ``recon run --explain`` prints it (:func:`explain`) and records nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from recon.config import PipelineConfig
from recon.config.connections import kafka_connection
from recon.engines import needs_spark
from recon.read.sink import SinkTable, inspect_sink
from recon.read.sink_copy import sink_position_for_run
from recon.run.services import sink_db
from recon.snapshot.offsets import KafkaAuthFailed, take_offsets
from recon.snapshot.sink_position import SinkPosition
from recon.snapshot.window import PartitionWindow, plan_windows
from recon.store.runs import PipelineState


@dataclass(frozen=True)
class RunPlan:
    """One run's facts, before any record is read.

    :param cfg: the pipeline's declaration.
    :param base: where the pipeline stood (the last committed run, its watermarks and sink
        position).
    :param sink: the sink table as its catalog describes it.
    :param sink_position: the sink at the snapshot (None: the sink has no ingest sequence).
    :param snapshot_time: when Kafka was asked, in epoch seconds (the settle time counts back
        from it).
    :param windows: each partition's window.
    """

    cfg: PipelineConfig
    run_id: str
    base: PipelineState
    sink: SinkTable
    sink_position: SinkPosition | None
    snapshot_time: float
    windows: tuple[PartitionWindow, ...]
    #: how the run reads the sink when it has something to say (``recon.read.sink_copy``:
    #: by ``xmin``, or whole and why); ``base`` then holds no sink snapshot for a whole read.
    sink_read: str | None = None

    @property
    def offsets(self) -> int:
        """How many offsets the run's windows span (records, gaps and markers)."""
        return sum(w.window_to - w.read_from for w in self.windows)


def resolve_plan(
    cfg: PipelineConfig, run_id: str, base: PipelineState, *, now: float | None = None
) -> RunPlan:
    """The run's plan, each service asked once.

    The sink first: every row it sees was written from a record that is in the log by the time
    Kafka is asked, so no row of a record past the snapshot becomes a phantom.

    :param base: where the pipeline stands (``recon.store.load_state``).
    :param now: the snapshot time in epoch seconds (default: the clock, after the sink).
    :raises KafkaAuthFailed: the broker refused the connection's credentials (named).
    """
    with sink_db(cfg) as sink_pg:
        table = inspect_sink(sink_pg, cfg.sink, cfg.name, cfg.payload, cfg.order)
        position, base, sink_read = sink_position_for_run(cfg, sink_pg, table.identifier(), base)
    kafka = kafka_connection(cfg.kafka.connection)
    snapshot_time = time.time() if now is None else now
    try:
        offsets = take_offsets(
            kafka.config, cfg.kafka.topic, cfg.kafka.consumer_group, cfg.settle_seconds,
            now=snapshot_time,
        )  # fmt: skip
    except KafkaAuthFailed as exc:
        raise KafkaAuthFailed(kafka.failure(cfg.name, exc)) from None
    windows = plan_windows(offsets, base.watermarks, cfg.kafka.start_offsets or "earliest")
    return RunPlan(cfg, run_id, base, table, position, snapshot_time, tuple(windows), sink_read)


def explain(plan: RunPlan, data_dir: str) -> list[str]:
    """The plan as lines for a person: what the run would read and judge, and how."""
    cfg = plan.cfg
    lines = [
        f"pipeline {cfg.name}: claims {cfg.semantics}; run {plan.run_id}",
        f"engine: {_engine(cfg)}; data directory {data_dir}",
        "state: " + (f"from run {plan.base.run_id}" if plan.base.run_id else "first run"),
        f"kafka: topic {cfg.kafka.topic} ({len(plan.windows)} partitions, cleanup.policy "
        f"{_policy(plan.windows)}), group {cfg.kafka.consumer_group}, messageId "
        f"{_message_id(cfg)}, records younger than {cfg.settle_seconds:g} s are pending",
    ]
    for w in plan.windows:
        committed = "nothing committed" if w.committed_offset is None else (
            f"committed {w.committed_offset}"
        )  # fmt: skip
        gone = f", offsets {w.window_from}-{w.removed_to - 1} already removed" if (
            w.unverifiable
        ) else ""  # fmt: skip
        lines.append(
            f"  partition {w.partition}: log {w.log_start_offset}-{w.high_watermark} (stable "
            f"{w.last_stable_offset}), {committed}; window [{w.window_from}, {w.window_to}): "
            f"{w.window_to - w.read_from} offsets{gone}" + (", rewound" if w.rewound else "")
        )
    lines.append(f"window: {plan.offsets} offsets in all")
    table = f"{plan.sink.schema}.{plan.sink.table}"
    key = ", ".join(plan.sink.key_columns) or "ctid (no primary key)"
    lines.append(f"sink: {table} (row key {key}; messageId column "
                 f"{cfg.sink.message_id_column}); reads {_sink_read(plan)}")  # fmt: skip
    checks = _checks(cfg, plan.sink)
    lines.append("checks: " + ("; ".join(checks) if checks else "none besides delivery"))
    if cfg.source is not None:
        what = f"topic {cfg.source.topic}" if cfg.source.is_topic else f"table {cfg.source.table}"
        lines.append(f"source: {what} (three-way: source -> topic -> sink)")
    lines.append("nothing was recorded: recon run without --explain takes this snapshot")
    return lines


def _engine(cfg: PipelineConfig) -> str:
    from recon import settings

    if not needs_spark(cfg):
        return f"local (DuckDB, no JVM; memory limit {settings.local_memory_limit()})"
    remote = settings.spark_remote()
    return f"spark (attached to {remote})" if remote else f"spark ({settings.spark_master()})"


def _policy(windows: tuple[PartitionWindow, ...]) -> str:
    policies = {w.cleanup_policy for w in windows}
    if not policies or policies == {None}:
        return "not readable"
    return ", ".join(sorted(p or "not readable" for p in policies))


def _message_id(cfg: PipelineConfig) -> str:
    spec = cfg.kafka.message_id
    return "the record key" if spec.kind == "key" else f"{spec.kind} {spec.name}"


def _sink_read(plan: RunPlan) -> str:
    seq = plan.cfg.sink.ingest_seq_column
    if seq is None:
        return plan.sink_read or "the whole table"
    to = plan.sink_position.seq if plan.sink_position is not None else None
    since = plan.base.sink_seq
    if to is None:
        return f"no row (the table is empty; ingest sequence {seq})"
    return f"rows of ingest sequence {seq} after {since} up to {to}, and rows that committed late"


def _checks(cfg: PipelineConfig, sink: SinkTable) -> list[str]:
    checks = []
    if cfg.payload is not None:
        checks.append(f"payload ({len(sink.payload_kinds) or 1} compared)")
    if cfg.sink.time_column is not None:
        bound = cfg.latency.max_seconds if cfg.latency is not None else None
        checks.append(f"latency from {cfg.sink.time_column}"
                      + (f", bound {bound:g} s" if bound is not None else ""))  # fmt: skip
    if cfg.order is not None:
        checks.append("order of an upsert sink")
    return checks
