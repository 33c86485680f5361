"""Applying a plan (``recon repair apply``): the sink deletes in one transaction, then the
replays, each step safe to run again.

1. The plan must match the pipeline as declared now (sink connection and table, topic), be the
   one recorded in ``recon.repairs`` (the apply goes on with that record), and an apply claims
   it: a second apply of the plan at once is refused (:mod:`recon.repair.trust`).
2. ``recon.repairs``: a plan already ``applied`` (or judged) changes nothing. Otherwise its
   changes are checked against the run's results and the catalog, its deletes against the
   pipeline's bound; it is marked ``applying`` and the replay topic's end offsets are kept
   (once).
3. The sink, in one transaction with the plan's rows locked: as planned -> delete exactly the
   planned rows (refused if any is missing or a duplicated message would lose its last row)
   and, for a ``sink`` plan, insert the lost messages' rows built from their records; as the
   plan leaves it -> an earlier apply committed that transaction, nothing to do; anything else
   (a lost message with a row it did not write, other keys) -> refused, nothing changed.
4. A ``topic`` plan's replays: the ones an earlier apply committed are found by their header
   and skipped; the rest are read at their offsets and produced again, idempotently (in one
   Kafka transaction when the pipeline claims exactly-once).
5. ``recon.repairs``: ``applied``, with who, when, the deleted count and where every replay
   went (a partition and offset, or the key of the row written).

A crash anywhere leaves the plan ``applying``; applying it again finishes it (the claim goes
with the session of the apply that died).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from recon import settings
from recon.alert.text import shown
from recon.config import PipelineConfig
from recon.config.connections import kafka_connection
from recon.repair.direct import row_values
from recon.repair.plan_model import RepairPlan, SinkState
from recon.repair.replay import produce, read_originals, replayed_before, watermarks
from recon.repair.sink_rows import (
    RepairStale,
    Row,
    affected_rows,
    delete_rows,
    delete_statement,
    insert_rows,
    insert_statement,
    state_of,
)
from recon.repair.trust import (
    RepairBusy,
    check_matches,
    check_results,
    check_sink,
    stored_plan,
)
from recon.run.services import results_db, sink_db
from recon.store import repairs as store

Say = Callable[[str], None]


@dataclass
class ApplyResult:
    plan_id: str
    status: str  # applied | nothing to do | dry run
    deleted: int = 0
    replayed: int = 0
    already_replayed: int = 0
    not_replayable: list[str] = field(default_factory=list)


def _stale(plan: RepairPlan, now: SinkState, arrived: int) -> RepairStale:
    return RepairStale(
        f"pipeline '{plan.pipeline}': the sink changed since plan {plan.plan_id} was made: "
        f"{plan.before.rows} rows of the messages it deletes from then, {now.rows} now"
        + (", other keys" if now.rows == plan.before.rows and now != plan.before else "")
        + (f"; {arrived} of its lost messages have sink rows now" if arrived else "")
        + ": nothing was changed; make a new plan with `recon repair plan`"
    )


def _show_sql(say: Say, statements: list[str]) -> None:
    if statements:
        say("sink (one transaction):\n  " + "\n  ".join(statements))


def _sink_step(plan: RepairPlan, cfg: PipelineConfig, say: Say, *, dry_run: bool,
               replayed: set[str]) -> int:  # fmt: skip
    """A ``topic`` plan's deletes, or the proof an earlier apply made them; :returns: rows
    deleted now.

    :param replayed: lost messages an earlier apply replayed (their sink rows may be there now).
    """
    with sink_db(cfg) as pg:
        try:
            now = state_of(affected_rows(pg, plan.sink, plan.state_ids(), None, lock=not dry_run))
            lost = sorted({r.message_id for r in plan.replays} - replayed)
            arrived = {m for m, _ in affected_rows(pg, plan.sink, lost, None)}
            if arrived or now not in (plan.before, plan.after):
                raise _stale(plan, now, len(arrived))
            if now == plan.after and plan.before != plan.after:
                say(f"sink: the plan's {len(plan.deletes)} deletes were committed by an earlier "
                    "apply; nothing to delete")  # fmt: skip
                return 0
            if dry_run:
                if plan.deletes:
                    query, params = delete_statement(pg, plan.sink, plan.deletes)
                    _show_sql(say, [pg.cursor().mogrify(query, params).decode()])
                return 0
            deleted = delete_rows(pg, plan.sink, plan.deletes, set(plan.kept))
            pg.commit()
            return deleted
        finally:
            pg.rollback()


def _write_sink(plan: RepairPlan, cfg: PipelineConfig, say: Say, *, dry_run: bool,
                rows: list[list[Any]], again: bool) -> list[Row]:  # fmt: skip
    """A ``sink`` plan's one transaction: the deletes and the lost messages' rows.

    :param rows: the rows to insert (``plan.sink_columns`` order).
    :param again: an earlier apply started (the plan is ``applying``): a sink as the plan
        leaves it (its deletes made, or rows of its lost messages there, one each) is that
        apply's committed work; a sink as planned means its transaction never committed.
    :returns: (messageId, key) of each row written, now or by the earlier apply.
    """
    columns = [c for c, _, _ in plan.sink_columns]
    lost = sorted({r.message_id for r in plan.replays})
    with sink_db(cfg) as pg:
        try:
            now = state_of(affected_rows(pg, plan.sink, plan.state_ids(), None, lock=not dry_run))
            present = affected_rows(pg, plan.sink, lost, None)
            counts = Counter(m for m, _ in present)
            fresh = now == plan.before and not present
            # Without deletes the state cannot tell; the rows the transaction wrote can.
            committed = (plan.before != plan.after or bool(present)) and now == plan.after
            if not fresh and again and committed and max(counts.values(), default=0) <= 1:
                say("sink: the plan's transaction was committed by an earlier apply")
                return present
            if not fresh:
                raise _stale(plan, now, len(counts))
            statements = []
            if plan.deletes:
                query, params = delete_statement(pg, plan.sink, plan.deletes)
                statements.append(pg.cursor().mogrify(query, params).decode())
            insert = insert_statement(pg, plan.sink, columns, rows) if rows else None
            if dry_run:
                _show_sql(say, [*statements, *([insert] if insert else [])])
                return []
            delete_rows(pg, plan.sink, plan.deletes, set(plan.kept))
            written = insert_rows(pg, insert) if insert else []
            pg.commit()
            return written
        finally:
            pg.rollback()


def _describe(original: Any, target: str) -> str:
    def show(b: bytes | None) -> str:
        return "null" if b is None else repr(b[:300]) + (" ..." if len(b) > 300 else "")

    r = original.replay
    headers = ", ".join(f"{k}={show(v)}" for k, v in original.headers)
    return (
        f"  {r.verdict} {shown(r.message_id)}: {r.partition}@{r.offset} -> {shown(target)}: "
        f"key {show(original.key)}, value {show(original.value)}, headers [{headers}]"
    )


def _refused(plan: RepairPlan, exc: RepairStale) -> None:
    with results_db() as pg:
        store.mark_refused(pg, plan.plan_id, str(exc))


def apply_plan(plan: RepairPlan, cfg: PipelineConfig, *, dry_run: bool = False,
               say: Say = print, by: str | None = None,
               allow_over_bound: bool = False) -> ApplyResult:  # fmt: skip
    """Apply ``plan`` (see the module); ``dry_run``: print the SQL and the records, change
    nothing.

    :param by: who applies, as ``recon.repairs`` records it (default:
        :func:`recon.settings.applied_by`; the Airflow task passes its DAG run).
    :param allow_over_bound: apply deletes above the pipeline's bound (``recon repair apply
        --allow-over-bound``, a person's decision; the repair DAG never passes it).

    :raises RepairRefused: the plan does not match the pipeline, its record, the run's results
        or the catalog, is above the bound, or would be unsafe.
    :raises RepairBusy: another apply of the plan is running.
    :raises RepairStale: the sink changed since the plan was made.
    :raises recon.repair.replay.ReplayFailed: Kafka failed; applying again finishes.
    """
    check_matches(plan, cfg)
    plan, _ = stored_plan(plan)
    who = by or settings.applied_by()
    if dry_run:
        return _apply(plan, cfg, say, dry_run=True, by=who, allow_over_bound=allow_over_bound)
    with results_db() as claim:
        if not store.claim(claim, plan.plan_id):
            holder = store.find_repair(claim, plan.plan_id)
            raise RepairBusy(
                f"pipeline '{plan.pipeline}': plan {plan.plan_id} is being applied by another "
                "apply now" + (f" (started by {shown(holder.applied_by)})"
                               if holder and holder.applied_by else "")
                + ": nothing was changed; `recon repair list` shows when it is done"
            )  # fmt: skip
        return _apply(plan, cfg, say, dry_run=False, by=who, allow_over_bound=allow_over_bound)


def _apply(plan: RepairPlan, cfg: PipelineConfig, say: Say, *, dry_run: bool, by: str,
           allow_over_bound: bool) -> ApplyResult:  # fmt: skip
    """:func:`apply_plan` once the plan is the stored one and claimed (unless a dry run)."""
    with results_db() as pg:
        row = store.find_repair(pg, plan.plan_id)
    assert row is not None, plan.plan_id  # stored_plan found it; plans are never removed
    if row.status in store.DONE:
        say(f"plan {plan.plan_id}: already {row.status} (by {row.applied_by} at "
            f"{row.applied_at}); nothing to do")  # fmt: skip
        return ApplyResult(plan.plan_id, "nothing to do")
    check_results(plan)
    # From here on the SQL addresses the table and key the pipeline and the catalog name.
    plan = dataclasses.replace(
        plan, sink=check_sink(plan, cfg, say, dry_run=dry_run, allow_over_bound=allow_over_bound)
    )
    kafka = kafka_connection(cfg.kafka.connection).config
    resumed = row.status == "applying"
    if not dry_run:
        ends = {}
        if plan.replay_mode == "topic":
            ends = {str(p): high for p, (_, high) in watermarks(kafka, plan.replay_topic).items()}
        with results_db() as pg:
            row = store.mark_applying(pg, plan.plan_id, by, ends)
    result = ApplyResult(plan.plan_id, "dry run" if dry_run else "applied")
    if plan.replay_mode == "sink":
        return _apply_to_sink(plan, cfg, kafka, result, resumed=resumed, dry_run=dry_run,
                              say=say)  # fmt: skip
    earlier = (
        {} if row.replay_from is None
        else replayed_before(kafka, plan.replay_topic, plan.plan_id, row.replay_from)
    )  # fmt: skip
    try:
        result.deleted = _sink_step(plan, cfg, say, dry_run=dry_run, replayed=set(earlier))
    except RepairStale as exc:
        if not dry_run and not resumed:
            _refused(plan, exc)
        raise
    todo = [r for r in plan.replays if r.message_id not in earlier]
    originals, gone = read_originals(kafka, plan.topic, cfg.kafka.message_id, todo)
    result.not_replayable = [f"{r.message_id}: {why}" for r, why in gone]
    result.not_replayable += [f"{n.message_id}: {n.reason}" for n in plan.not_replayable]
    if dry_run:
        if originals:
            exactly_once = cfg.semantics == "exactly_once"
            say(f"replays ({len(originals)} records"
                + (", one Kafka transaction" if exactly_once else "") + "):")  # fmt: skip
            for o in originals:
                say(_describe(o, plan.replay_topic))
        for line in result.not_replayable:
            say(f"  not replayable: {line}")
        return result
    positions = {}
    if originals:
        positions = produce(kafka, plan.replay_topic, plan.replay_topic == plan.topic,
                            originals, plan.plan_id,
                            transactional=cfg.semantics == "exactly_once")  # fmt: skip
    result.replayed, result.already_replayed = len(positions), len(earlier)
    replayed = [{"message_id": m, "partition": p, "offset": o}
                for m, (p, o) in sorted({**earlier, **positions}.items())]  # fmt: skip
    with results_db() as pg:
        store.mark_applied(pg, plan.plan_id, len(plan.deletes), replayed,
                           "; ".join(result.not_replayable)[:2000] or None)  # fmt: skip
    return result


def _apply_to_sink(plan: RepairPlan, cfg: PipelineConfig, kafka: dict[str, Any],
                   result: ApplyResult, *, resumed: bool, dry_run: bool,
                   say: Say) -> ApplyResult:  # fmt: skip
    """A ``sink`` plan: the lost messages' rows written from their records, in the same
    transaction as the deletes.

    :param resumed: an earlier apply of the plan started (and may have committed).
    """
    originals, gone = read_originals(kafka, plan.topic, cfg.kafka.message_id, plan.replays)
    rows = [row_values(o, plan.topic, plan.sink_columns) for o in originals]
    result.not_replayable = [f"{r.message_id}: {why}" for r, why in gone]
    result.not_replayable += [f"{n.message_id}: {n.reason}" for n in plan.not_replayable]
    try:
        written = _write_sink(plan, cfg, say, dry_run=dry_run, rows=rows, again=resumed)
    except RepairStale as exc:
        if not dry_run and not resumed:
            _refused(plan, exc)
        raise
    if dry_run:
        for line in result.not_replayable:
            say(f"  not replayable: {line}")
        return result
    result.deleted, result.replayed = len(plan.deletes), len(written)
    replayed = [{"message_id": m, "sink_key": list(k)} for m, k in sorted(written)]
    with results_db() as pg:
        store.mark_applied(pg, plan.plan_id, len(plan.deletes), replayed,
                           "; ".join(result.not_replayable)[:2000] or None)  # fmt: skip
    return result
