"""A run's plan: what a run knows before it reads a record, resolved once.

:func:`resolve_plan` asks each service its question once — the results store where the pipeline
stands, the sink's catalog for the table (and its ingest sequence for the sink's position), a
source table's catalog, Kafka for the topic's partitions, offsets, cleanup policy, timestamp type
and the group's commits — and plans each partition's window from them. Step 1
(``recon.run.steps.snapshot_offsets``) records exactly this plan, the catalogs' answers with it
(:class:`Catalog`); ``recon run --explain`` prints it (:func:`explain`) and records nothing.

Steps 2 and 3 and the validation run in processes of their own (Airflow tasks): each loads the
recorded plan once (:func:`load_plan`: the run's record, what the catalogs said, the source
times, the settings its engine reads) and hands that :class:`PlannedRun` down; nothing below
asks the catalogs or the settings again.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from recon import settings, store
from recon.config import PipelineConfig
from recon.config.connections import KafkaConnection, kafka_connection
from recon.engines import needs_spark
from recon.read.catalog import Catalog, inspect_catalog
from recon.read.sink import SinkTable
from recon.read.sink_copy import sink_position_for_run
from recon.read.source import SourceTimes, source_times
from recon.run.services import default_data_dir, results_db, sink_db
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
    :param catalog: what the catalogs said (the sink table, a source table, the topic).
    :param sink_position: the sink at the snapshot (None: the sink has no ingest sequence).
    :param snapshot_time: when Kafka was asked, in epoch seconds (the settle time counts back
        from it).
    :param windows: each partition's window.
    """

    cfg: PipelineConfig
    run_id: str
    base: PipelineState
    catalog: Catalog
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
    position: SinkPosition | None
    sink_read: str | None
    kafka = kafka_connection(cfg.kafka.connection)
    if cfg.sink.is_kafka:
        from recon.snapshot.target_step import plan_target

        # The target's ranges kept as the run's sink snapshot: the next run resumes there and a
        # re-run reads the same records; the catalog's sink is the topic.
        assert cfg.sink.topic is not None
        kept, sink_read = plan_target(cfg, base.sink_snapshot)
        catalog = Catalog(
            SinkTable(schema=cfg.sink.connection, table=cfg.sink.topic, key_columns=())
        )
        position = SinkPosition(None, kept, None)
    else:
        with sink_db(cfg) as sink_pg:
            catalog = inspect_catalog(cfg, sink_pg)
            position, base, sink_read = sink_position_for_run(
                cfg, sink_pg, catalog.sink.identifier(), base
            )
    snapshot_time = time.time() if now is None else now
    try:
        offsets = take_offsets(
            kafka.config, cfg.kafka.topic, cfg.kafka.consumer_group, cfg.settle_seconds,
            now=snapshot_time,
        )  # fmt: skip
    except KafkaAuthFailed as exc:
        raise KafkaAuthFailed(kafka.failure(cfg.name, exc)) from None
    windows = plan_windows(offsets, base.watermarks, cfg.kafka.start_offsets or "earliest")
    if cfg.sink.time_column is not None and offsets:
        # It labels the latencies (who set the record's time), never judges them.
        catalog = dataclasses.replace(catalog, timestamp_type=offsets[0].timestamp_type)
    if cfg.diverted is not None:
        # After the group's offsets: a recoverer publishes before its group commits past the
        # original, so every dead-letter record of a committed record is in these ranges.
        from recon.read.dead_letters import planned_ranges

        marks = {k: w.next_offset for k, w in base.watermarks.items()}
        ranges = planned_ranges(cfg.diverted, marks, kafka.config)
        catalog = dataclasses.replace(catalog, dead_letter_ranges=ranges)
    return RunPlan(cfg, run_id, base, catalog, position, snapshot_time, tuple(windows), sink_read)


@dataclass(frozen=True)
class EngineSettings:
    """The settings a run's engine reads, read once when its plan is loaded.

    :param spark: the pipeline's engine runs on Spark (``recon.engines.needs_spark``).
    :param memory_limit: DuckDB's memory limit (``engine: local``).
    :param readers: the Kafka reader processes of the local engine's reads (``engine: local``).
    :param spark_master: the Spark master (``engine: spark``): a local one's driver reads every
        window itself (``recon.engines.spark_snapshot.window_on_driver``).
    :param driver_read: the largest window the Spark engine's driver reads itself (None: the
        default bound).
    """

    spark: bool
    memory_limit: str | None = None
    readers: int | None = None
    spark_master: str | None = None
    driver_read: int | None = None

    @classmethod
    def read(cls, spark: bool) -> EngineSettings:
        """The settings of the engine (``spark``: the Spark engine's, else the local one's)."""
        if not spark:
            return cls(False, settings.local_memory_limit(), settings.local_readers())
        return cls(True, spark_master=settings.spark_master(),
                   driver_read=settings.spark_driver_read())  # fmt: skip


@dataclass(frozen=True)
class PlannedRun:
    """A run as step 1 planned and recorded it: all that steps 2 and 3 and the validation
    use, loaded once by each (:func:`load_plan`) and passed down.

    :param cfg: the pipeline's declaration.
    :param record: the run's record: its windows, base run and ledger, sink range.
    :param catalog: what the catalogs said at step 1.
    :param source_times: which source rows the run reads and judges (None: no source).
    :param data_dir: where the run's files are.
    :param engine: the settings its engine reads.
    :param kafka: the connection to the pipeline's topic.
    """

    cfg: PipelineConfig
    record: store.RunRecord
    catalog: Catalog
    source_times: SourceTimes | None
    data_dir: str
    engine: EngineSettings
    kafka: KafkaConnection

    @property
    def run_id(self) -> str:
        return self.record.run_id

    @property
    def windows(self) -> list[PartitionWindow]:
        return self.record.windows


def load_plan(cfg: PipelineConfig, run_id: str, *, data_dir: str | None = None) -> PlannedRun:
    """The run's plan as step 1 recorded it, and the settings its engine reads: the one look-up
    of a later step. A run recorded before runs kept their catalogs' answers asks the tables'
    catalogs here, once (its latencies then name no timestamp type).

    :param data_dir: where the run's files are (default: ``recon.settings.data_dir``).
    :raises store.RunNotFound: the run has no snapshot yet.
    """
    engine = EngineSettings.read(needs_spark(cfg))
    with results_db() as pg:
        record = store.find_run(pg, cfg.name, run_id)
        if record is None:
            raise store.RunNotFound(
                f"pipeline '{cfg.name}': run '{run_id}' has no offset snapshot yet: "
                "run snapshot_offsets first"
            )
        base = None
        if cfg.source is not None and record.base_run_id is not None:
            base = store.find_run(pg, cfg.name, record.base_run_id)
    kafka = kafka_connection(cfg.kafka.connection)
    if record.catalog is None:
        with sink_db(cfg) as sink_pg:
            catalog = inspect_catalog(cfg, sink_pg)
    else:
        catalog = Catalog.from_json(record.catalog)
    times = None if cfg.source is None else source_times(
        cfg, record.snapshot_at, None if base is None else base.snapshot_at
    )  # fmt: skip
    return PlannedRun(cfg, record, catalog, times, data_dir or default_data_dir(), engine, kafka)


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
    sink = plan.catalog.sink
    table = f"{sink.schema}.{sink.table}"
    key = ", ".join(sink.key_columns) or "ctid (no primary key)"
    if cfg.sink.is_kafka and cfg.sink.message_id is not None:
        mid = cfg.sink.message_id
        lines.append(f"sink: topic {sink.table} of connection {sink.schema} (a row per record, "
                     f"keyed topic:partition:offset; messageId {mid.kind} {mid.name or ''}"
                     f"); reads {plan.sink_read}")  # fmt: skip
    else:
        lines.append(f"sink: {table} (row key {key}; messageId column "
                     f"{cfg.sink.message_id_column}); reads {_sink_read(plan)}")  # fmt: skip
    checks = _checks(cfg, sink)
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
