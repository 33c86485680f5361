"""Applying a plan (``recon repair apply``): the sink deletes in one transaction, then the
replays, each step safe to run again.

1. The plan must match the pipeline as declared now (sink connection and table, topic).
2. ``recon.repairs``: a plan already ``applied`` (or judged) changes nothing. Otherwise it is
   marked ``applying`` and the replay topic's end offsets are kept (once).
3. The sink, in one transaction with the plan's rows locked: as planned -> delete exactly the
   planned rows (refused if any is missing or a duplicated message would lose its last row);
   as the plan leaves it -> an earlier apply committed the deletes, nothing to do; anything
   else -> refused, nothing changed.
4. The replays: the ones an earlier apply committed are found by their header and skipped; the
   rest are read at their offsets and produced again, idempotently (in one Kafka transaction
   when the pipeline claims exactly-once).
5. ``recon.repairs``: ``applied``, with who, when, the deleted count and every replay's position.

A crash anywhere leaves the plan ``applying``; applying it again finishes it.
"""

from __future__ import annotations

import getpass
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from recon.alert.text import shown
from recon.config import PipelineConfig
from recon.connections import kafka_connection
from recon.repair.plan_model import RepairPlan
from recon.repair.replay import produce, read_originals, replayed_before, watermarks
from recon.repair.sink_rows import (
    RepairRefused,
    RepairStale,
    affected_rows,
    delete_rows,
    delete_statement,
    state_of,
)
from recon.services import results_db, sink_db
from recon.store import ensure_schema
from recon.store import repairs as store

Say = Callable[[str], None]


@dataclass
class ApplyResult:
    plan_id: str
    status: str  # applied | already <status> | dry run
    deleted: int = 0
    replayed: int = 0
    already_replayed: int = 0
    not_replayable: list[str] = field(default_factory=list)


def check_matches(plan: RepairPlan, cfg: PipelineConfig) -> None:
    """:raises RepairRefused: the plan was made for another pipeline, sink or topic than the
    pipeline declared now."""
    differences = [
        f"{what}: plan {planned!r}, pipeline {now!r}"
        for what, planned, now in (
            ("pipeline", plan.pipeline, cfg.name),
            ("sink.connection", plan.sink.connection, cfg.sink.connection),
            ("sink.table", plan.sink.table, cfg.sink.table),
            ("sink.message_id_column", plan.sink.message_id_column, cfg.sink.message_id_column),
            ("kafka.connection", plan.kafka_connection, cfg.kafka.connection),
            ("kafka.topic", plan.topic, cfg.kafka.topic),
        )
        if planned != now
    ]
    if differences:
        raise RepairRefused(
            f"plan {plan.plan_id} does not match pipeline '{cfg.name}' as declared now ("
            + "; ".join(differences)
            + "): nothing was changed"
        )


def applied_by() -> str:
    """Who applies: ``RECON_APPLIED_BY`` (the Airflow task sets it to its DAG run), else the OS
    user at this host."""
    return os.environ.get("RECON_APPLIED_BY") or f"{getpass.getuser()}@{socket.gethostname()}"


def _sink_step(plan: RepairPlan, cfg: PipelineConfig, say: Say, *, dry_run: bool,
               replayed: set[str]) -> int:  # fmt: skip
    """The deletes, or the proof an earlier apply made them; :returns: rows deleted now.

    :param replayed: lost messages an earlier apply replayed (their sink rows may be there now).
    """
    with sink_db(cfg) as pg:
        try:
            now = state_of(affected_rows(pg, plan.sink, plan.state_ids(), None, lock=not dry_run))
            lost = sorted({r.message_id for r in plan.replays} - replayed)
            arrived = {m for m, _ in affected_rows(pg, plan.sink, lost, None)}
            if arrived or now not in (plan.before, plan.after):
                raise RepairStale(
                    f"pipeline '{plan.pipeline}': the sink changed since plan {plan.plan_id} was "
                    f"made: {plan.before.rows} rows of the messages it deletes from then, "
                    f"{now.rows} now" + (", other keys" if now.rows == plan.before.rows else "")
                    + (f"; {len(arrived)} of its lost messages have sink rows now"
                       if arrived else "")
                    + ": nothing was changed; make a new plan with `recon repair plan`"
                )  # fmt: skip
            if now == plan.after and plan.before != plan.after:
                say(f"sink: the plan's {len(plan.deletes)} deletes were committed by an earlier "
                    "apply; nothing to delete")  # fmt: skip
                return 0
            if dry_run:
                if plan.deletes:
                    query, params = delete_statement(pg, plan.sink, plan.deletes)
                    say("sink (one transaction):\n  "
                        + pg.cursor().mogrify(query, params).decode())  # fmt: skip
                return 0
            deleted = delete_rows(pg, plan.sink, plan.deletes, set(plan.kept))
            pg.commit()
            return deleted
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


def apply_plan(plan: RepairPlan, cfg: PipelineConfig, *, dry_run: bool = False,
               say: Say = print) -> ApplyResult:  # fmt: skip
    """Apply ``plan`` (see the module); ``dry_run``: print the SQL and the records, change
    nothing.

    :raises RepairRefused: the plan does not match the pipeline, or would be unsafe.
    :raises RepairStale: the sink changed since the plan was made.
    :raises recon.repair.replay.ReplayFailed: Kafka failed; applying again finishes.
    """
    check_matches(plan, cfg)
    kafka = kafka_connection(cfg.kafka.connection).config
    with results_db() as pg:
        ensure_schema(pg)
        row = store.find_repair(pg, plan.plan_id)
        if row is None:
            from recon.repair.plan_model import plan_to_dict

            row = store.record_plan(pg, plan_to_dict(plan))
        if row.status in store.DONE:
            say(f"plan {plan.plan_id}: already {row.status} (by {row.applied_by} at "
                f"{row.applied_at}); nothing to do")  # fmt: skip
            return ApplyResult(plan.plan_id, f"already {row.status}")
        if not dry_run:
            ends = {str(p): high for p, (_, high) in watermarks(kafka, plan.replay_topic).items()}
            row = store.mark_applying(pg, plan.plan_id, applied_by(), ends)
    result = ApplyResult(plan.plan_id, "dry run" if dry_run else "applied")
    earlier = (
        {} if row.replay_from is None
        else replayed_before(kafka, plan.replay_topic, plan.plan_id, row.replay_from)
    )  # fmt: skip
    try:
        result.deleted = _sink_step(plan, cfg, say, dry_run=dry_run, replayed=set(earlier))
    except RepairStale as exc:
        if not dry_run and not earlier:
            with results_db() as pg:
                store.mark_refused(pg, plan.plan_id, str(exc))
        raise
    todo = [r for r in plan.replays if r.message_id not in earlier]
    originals, gone = read_originals(kafka, plan.topic, cfg.kafka.message_id, todo)
    result.not_replayable = [f"{r.message_id}: {why}" for r, why in gone]
    result.not_replayable += [f"{n.message_id}: {n.reason}" for n in plan.not_replayable]
    same_topic = plan.replay_topic == plan.topic
    if dry_run:
        if originals:
            say(
                f"replays ({len(originals)} records"
                + (", one Kafka transaction" if cfg.semantics == "exactly_once" else "")
                + "):"
            )
            for o in originals:
                say(_describe(o, plan.replay_topic))
        for line in result.not_replayable:
            say(f"  not replayable: {line}")
        return result
    positions = {}
    if originals:
        positions = produce(kafka, plan.replay_topic, same_topic, originals, plan.plan_id,
                            transactional=cfg.semantics == "exactly_once")  # fmt: skip
    result.replayed, result.already_replayed = len(positions), len(earlier)
    replayed = [{"message_id": m, "partition": p, "offset": o}
                for m, (p, o) in sorted({**earlier, **positions}.items())]  # fmt: skip
    with results_db() as pg:
        store.mark_applied(pg, plan.plan_id, len(plan.deletes), replayed,
                           "; ".join(result.not_replayable)[:2000] or None)  # fmt: skip
    return result
