"""Step 3 of a run (``recon.run.steps``), once for both engines: register the run's inputs, run the
rule steps in the run's order, write the ledger version and the results, commit once.

What the engines do differently is IO only, behind :class:`RunIO`: where the window's parts and
the sink rows are read from, how the ledger store's entries are read and written, how the
read_uncommitted pass reads Kafka, and how the discrepancy rows reach PostgreSQL. Everything the
run decides is a rule step of ``recon.rules`` run through ``RunIO.rules``:

1. ``00_pending_read``: the pending input from the records read past the window's end.
2. a sink with an ingest sequence: ``00_fact_ids`` names the messages whose ledger entries are
   read; a sink scanned whole: ``00_scan_*`` keeps the rows and entries worth judging again.
3. the verdict steps (``01``-``06``); ``10_committed_counts`` says which partitions have offset
   gaps (only there can aborted records hide behind a phantom); when those hold phantoms
   (``07_verdict_counts``), they are read read_uncommitted, ``10_aborted`` keeps what only that
   pass saw, and the verdict steps run again with it.
4. the ledger steps (``08``-``09``), then ``07_verdict_counts`` and ``11_*`` over the results as
   written (``RunIO.results_at``): the counts, the discrepancy rows, their samples, the number
   of sink rows judged; one transaction of ``recon.store.commit_run``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, NamedTuple

from recon import store
from recon.engines.pending import (
    carried_pending_path,
    compaction_gaps,
    partition_ends,
    removed_ranges,
)
from recon.engines.plan import PlannedRun
from recon.engines.run_io import OpenIO, RunIO
from recon.ledger.versions import read_newest
from recon.model.verdicts import Verdict
from recon.read.source import untimed_source_rows
from recon.rules import (
    ABORTED_STEPS,
    CARRIED_STEPS,
    COMMIT_STEPS,
    COUNT_STEPS,
    FACT_LEDGER_STEPS,
    FACT_STEPS,
    PENDING_STEPS,
    SCAN_STEPS,
    SOURCE_FACT_STEPS,
    SOURCE_ID_STEPS,
    SOURCE_KNOWN_STEPS,
    Step,
)
from recon.rules.judging import Judging
from recon.rules.readouts import (
    LatencyRow,
    dead_letter_restarts,
    funnel,
    latency_stats,
    unordered,
    untimed,
)
from recon.rules.run import (
    Replays,
    RuleEngine,
    count_verdicts,
    judge_steps,
    next_ledger,
    register_parameters,
    run_steps,
)
from recon.run.outcome import (
    DISCREPANCY_SAMPLE,
    RunSummary,
    judged_outcome,
    mark_error,
    run_summary,
)
from recon.run.paths import results_path
from recon.run.services import Progress, noop, results_db
from recon.snapshot.window import PartitionWindow
from recon.store.repairs import replayed_positions
from recon.store.runs import record_missing_offsets


def reconcile_run(plan: PlannedRun, open_io: OpenIO, *, progress: Progress = noop) -> RunSummary:
    """Judge every message of the run and commit the results exactly once.

    :param open_io: the engine's IO for the run.
    :raises store.ConcurrentRunError: another run advanced the pipeline meanwhile.
    """
    started = time.monotonic()
    cfg, record, run_id = plan.cfg, plan.record, plan.run_id
    io = open_io(plan, progress)
    try:
        with results_db() as pg:
            store.mark_running(pg, cfg.name, run_id)
            replays = replayed_positions(pg, cfg.name, cfg.kafka.topic)
        try:
            judged = judge_run(plan, io, progress, started=started, replays=replays)
            outcome = judged_outcome(
                cfg, judged.counts, ledger_path=judged.ledger_path,
                sink_rows_scanned=judged.sink_rows_scanned,
                duration_seconds=time.monotonic() - started, latency=judged.latency,
                untimed=judged.untimed, late_after_ms=judged.judging.late_after_ms,
                timestamp_type=plan.catalog.timestamp_type if judged.latency else None,
                unordered=judged.unordered if cfg.order else None, funnel=judged.funnel,
                untimed_source=judged.untimed_source,
                dead_letter_positions=judged.dead_letter_positions,
            )  # fmt: skip
            with results_db() as pg:
                record_missing_offsets(pg, cfg.name, run_id, judged.missing_offsets)
                written = store.commit_run(
                    pg, record=record, outcome=outcome, discrepancies=io.discrepancy_rows()
                )
        except Exception as exc:
            mark_error(cfg, run_id, exc, progress)
            raise
    finally:
        io.close()
    progress(
        f"run {run_id}: committed {written} discrepancy rows in {outcome.duration_seconds:.1f} s"
    )
    return run_summary(cfg, record, outcome, written, judged.samples)


class JudgedRun(NamedTuple):
    """What a judged run hands the results store, besides its discrepancy rows."""

    #: rows per verdict (every verdict, 0 when absent) and rows flagged ``topic_duplicate``.
    counts: dict[str, int]
    #: the ledger version the run wrote.
    ledger_path: str
    sink_rows_scanned: int
    #: the first rows per verdict the run has (``11_samples``).
    samples: dict[str, list[dict[str, Any]]]
    #: delivery latencies, the whole run first (``07_latency_stats``); empty unless measured.
    latency: Sequence[LatencyRow] = ()
    #: usable records without a Kafka timestamp, sink rows with a null time column.
    untimed: tuple[int, int] = (0, 0)
    #: the declared checks the run applied (its latency bound, its payload comparison).
    judging: Judging = Judging()
    #: usable records and sink rows without an upsert key or position, and keys with more than
    #: one sink row (``order`` declared).
    unordered: tuple[int, int, int] = (0, 0, 0)
    #: a run with a source: ``recon.rules.readouts.funnel``'s counts and ``unsourced_sample``.
    funnel: dict[str, Any] | None = None
    #: a run with a source table: its rows without a time, which no run reads.
    untimed_source: int = 0
    #: per ``(topic, partition)``, the offsets of its read range without a committed record.
    missing_offsets: dict[tuple[str, int], int] = {}
    #: per dead-letter partition (``diverted``), where the next run reads it from.
    dead_letter_positions: dict[tuple[str, int], int] = {}


def judge_run(
    plan: PlannedRun,
    io: RunIO,
    progress: Progress = noop,
    *,
    started: float | None = None,
    replays: Replays = (),
) -> JudgedRun:
    """Every rule step of a run, in order, through ``io``; ends with the ledger version and the
    results written and the relation ``discrepancies`` defined (nothing is committed).

    :param started: when the run started (``time.monotonic()``), for the progress lines.
    :param replays: ``(topic, partition, offset)`` of the records the pipeline's repairs
        replayed (``recon.store.repairs.replayed_positions``).
    """
    cfg, record, source = plan.cfg, plan.record, plan.source_times
    rules, run_id = io.rules, record.run_id
    started = time.monotonic() if started is None else started
    rules.use("records", io.part("committed"))
    rules.use("readable", io.part("pending"))
    rules.use("inflight", io.part("inflight"))
    run_steps(rules, PENDING_STEPS)
    rules.use("pending", rules.relation("pending_read"))
    rules.use("sink_all", io.sink_rows())
    rules.use("source_rows", None if source is None else io.source_rows(source))
    run_steps(rules, SOURCE_ID_STEPS)
    base_entries = io.entry_store.read_manifest(record.base_ledger_path)
    sink, ledger, known = _ledger_inputs(plan, io, base_entries, progress)
    rules.use("source_known", known)
    rules.use("sink_rows", sink)
    rules.use("ledger", ledger)
    rules.use("uncommitted", None)
    rules.use("dead_letters", io.part("dead_letters") if cfg.diverted is not None else None)
    # Offset gaps are counted before judging: on a compacted topic they decide whether a sink
    # row without a record is unverifiable (the log cleaner may have removed its record).
    counted = _committed_counts(rules)
    gapped = _gapped(counted, record.windows)
    register_parameters(rules, removed_ranges(record.windows), partition_ends(record.windows),
                        replays, compaction_gaps(record.windows, counted),
                        target_removed=_target_removed(plan))  # fmt: skip
    judging = Judging.of(cfg, plan.catalog.sink.payload_kinds if cfg.payload else ())
    sourced = source is not None
    once = sourced and plan.catalog.source_named_once
    judge_steps(rules, judging, sourced=sourced, named_once=once)
    # Counting the results as judged computes every verdict once more: only a run with offset
    # gaps asks (a phantom there may be a record only a read_uncommitted pass sees; on a
    # compacted topic an unverifiable one too); every run counts its results once they are
    # written, from the file.
    verdicts = count_verdicts(rules) if gapped else {}
    phantoms = verdicts.get(Verdict.PHANTOM, 0)
    if any(w.compacted for w in gapped):
        phantoms += verdicts.get(Verdict.UNVERIFIABLE, 0)
    if phantoms:
        progress(
            f"run {run_id}: {phantoms} phantoms: read_uncommitted pass over {len(gapped)} "
            "partition(s) with offset gaps"
        )
        rules.use("every", io.read_every(gapped))
        run_steps(rules, ABORTED_STEPS)
        rules.use("uncommitted", rules.relation("aborted"))
        judge_steps(rules, judging, sourced=sourced, named_once=once)
    progress(f"run {run_id}: judged at {time.monotonic() - started:.1f} s")
    positions = _dead_letter_positions(plan, rules)

    latency = latency_stats(rules) if cfg.sink.time_column else []
    no_time = untimed(rules) if cfg.sink.time_column else (0, 0)
    if any(no_time):
        progress(f"run {run_id}: no latency for the messages of {no_time[0]} records without a "
                 f"Kafka timestamp and {no_time[1]} sink rows with a null "
                 f"{cfg.sink.time_column}")  # fmt: skip
    no_order = unordered(rules) if cfg.order else (0, 0, 0)
    if cfg.order and any(no_order[:2]):
        progress(f"run {run_id}: no order check for {no_order[0]} records without an upsert key "
                 f"or position and {no_order[1]} sink rows with a null {cfg.order.key_column} "
                 f"or {cfg.order.position_column}")  # fmt: skip
    if cfg.order and no_order[2]:
        progress(f"run {run_id}: {no_order[2]} keys have more than one row in the upsert sink "
                 f"(no unique {cfg.order.key_column}?): each is judged by its highest "
                 f"{cfg.order.position_column}")  # fmt: skip
    next_ledger(rules, run_id)
    ledger_path = io.write_version(base_entries, ledger is not None)
    progress(f"run {run_id}: ledger and results written at {time.monotonic() - started:.1f} s")
    # The steps after read the results back rather than judge the run again (each pass that
    # reads ``results`` computes them from the kept steps).
    written = io.results_at(results_path(plan.data_dir, cfg.name, run_id))
    if written is not None:
        rules.reread("results", written)
    counts = count_verdicts(rules)
    found = None
    untimed_source = 0
    if source is not None:
        counts_, unsourced = funnel(rules, DISCREPANCY_SAMPLE)
        found = {**counts_, "unsourced_sample": unsourced}
        progress(f"run {run_id}: source -> topic -> sink: {counts_['produced']} produced, "
                 f"{counts_['published']} published, {counts_['committed']} committed, "
                 f"{counts_['delivered']} delivered; {counts_['unsourced']} unsourced")  # fmt: skip
        untimed_source = untimed_source_rows(cfg)
        if untimed_source and cfg.source is not None:
            progress(f"run {run_id}: {untimed_source} source rows have a null or infinite "
                     f"{cfg.source.time_column}: no run reads them")  # fmt: skip

    run_steps(rules, COMMIT_STEPS, {"SAMPLE": str(DISCREPANCY_SAMPLE)})
    ((sink_scanned,),) = rules.rows("sink_scanned")
    wanted = [v for v, n in counts.items() if n and v != Verdict.DELIVERED]
    return JudgedRun(
        counts,
        ledger_path,
        int(sink_scanned),
        _samples(rules.rows("samples"), wanted),
        latency,
        no_time,
        judging,
        no_order,
        found,
        untimed_source,
        _missing(counted, record.windows),
        positions,
    )


def _dead_letter_positions(plan: PlannedRun, rules: RuleEngine) -> dict[tuple[str, int], int]:
    """Where the next run reads each dead-letter partition from (``diverted``): this run's
    end, or the first record of a message still pending (``06_dead_letters_carried``)."""
    if plan.cfg.diverted is None:
        return {}
    from recon.read.dead_letters import next_positions
    from recon.read.ranges import OffsetRange

    ranges = [OffsetRange(*r) for r in plan.catalog.dead_letter_ranges]
    return next_positions(ranges, dead_letter_restarts(rules))


def _target_removed(plan: PlannedRun) -> str | None:
    """What a Kafka sink's retention removed before this run read it, in words (None: nothing,
    or a table sink): the facts step 2 kept beside the sink copy
    (``recon.read.target_copy``)."""
    if not plan.cfg.sink.is_kafka:
        return None
    from recon.ledger.versions import local_path
    from recon.read.target_copy import facts_of
    from recon.run.paths import window_path

    directory = local_path(window_path(plan.data_dir, plan.cfg.name, plan.record.run_id, "sink"))
    if not facts_of(directory).removed:
        return None
    return (
        f"the sink topic {plan.cfg.sink.topic}'s retention removed records before any run read "
        "them: its copy may have been one of them"
    )


def _ledger_inputs(
    plan: PlannedRun, io: RunIO, base_entries: list[str], progress: Progress
) -> tuple[Any, Any | None, Any | None]:
    """The run's ``sink_rows``, ``ledger`` and ``source_known`` inputs (None: none), read from
    the base ledger in one read: with an ingest sequence, only the entries of the run's facts
    (and of its settled source messages); without one, the whole ledger, which decides which
    sink rows of the whole table are new (``SCAN_STEPS``)."""
    rules, source, by_seq = io.rules, plan.source_times, bool(plan.cfg.sink.ingest_seq_column)
    sourced: tuple[Step, ...] = () if source is None else SOURCE_KNOWN_STEPS
    ids = None
    if by_seq:
        rules.use("carried_from", _carried_from(plan, io, base_entries, progress))
        facts = CARRIED_STEPS + FACT_STEPS + (() if source is None else SOURCE_FACT_STEPS)
        run_steps(rules, facts)
        ids = rules.relation("fact_ids" if source is None else "source_fact_ids")
    ledger = read_newest(rules, io.entry_store, base_entries, ids)
    if ledger is None or (by_seq and source is None):
        return rules.relation("sink_all"), ledger, None
    rules.use("ledger_all", ledger)
    if by_seq:
        run_steps(rules, FACT_LEDGER_STEPS + sourced)
        sink, ledger = rules.relation("sink_all"), rules.relation("fact_ledger")
    else:
        run_steps(rules, sourced + SCAN_STEPS)
        sink, ledger = rules.relation("scan_sink_rows"), rules.relation("scan_ledger")
    return sink, ledger, None if source is None else rules.relation("source_in_ledger")


def _carried_from(
    plan: PlannedRun, io: RunIO, base_entries: list[str], progress: Progress
) -> Any | None:
    """Where the messages the base run left pending are read from (``00_carried``): its
    results; without them (a data directory cleaned by hand), the whole ledger."""
    record = plan.record
    path = carried_pending_path(plan.data_dir, plan.cfg.name, record)
    if path is None:
        return None
    found = io.results_at(path)
    if found is not None:
        return found
    progress(f"run {record.run_id}: no results of run {record.base_run_id} at {path}: "
             "the ledger is scanned for pending messages instead")  # fmt: skip
    return read_newest(io.rules, io.entry_store, base_entries)


def _committed_counts(rules: RuleEngine) -> dict[tuple[str, int], int]:
    """Committed records read per ``(topic, partition)``, in the window and past it:
    counted from the records on disk (``10_committed_counts``)."""
    run_steps(rules, COUNT_STEPS)
    return {(t, int(p)): int(n) for t, p, n in rules.rows("committed_counts")}


def _missing(
    counted: dict[tuple[str, int], int], windows: list[PartitionWindow]
) -> dict[tuple[str, int], int]:
    """Per partition, how many offsets of its read range hold no committed record."""
    return {
        (w.topic, w.partition): w.pending_to - w.read_from - counted.get((w.topic, w.partition), 0)
        for w in windows
        if w.pending_to > w.read_from
    }


def _gapped(
    counted: dict[tuple[str, int], int], windows: list[PartitionWindow]
) -> list[PartitionWindow]:
    """The partitions whose committed records do not fill ``[read_from, pending_to)``: counted
    from the records on disk, never from offset arithmetic alone."""
    return [
        w for w in windows
        if w.pending_to > w.read_from
        and counted.get((w.topic, w.partition), 0) < w.pending_to - w.read_from
    ]  # fmt: skip


def _samples(picked: list[tuple[Any, ...]], wanted: list[str]) -> dict[str, list[dict[str, Any]]]:
    """``11_samples``'s rows by verdict (and ``topic_duplicate``), for the verdicts the run has."""
    out: dict[str, list[dict[str, Any]]] = {v: [] for v in wanted}
    for pick, mid, topic, partition, offsets, keys, count, detail in picked:
        if pick in out:
            out[pick].append(
                {"message_id": mid, "topic": topic, "partition": partition,
                 "offsets": list(offsets or []), "sink_keys": list(keys or []),
                 "sink_count": count, "detail": detail}
            )  # fmt: skip
    return out
