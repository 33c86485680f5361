"""What an apply checks before it changes anything: a plan file names a plan, nothing more.

A plan's id is a SHA-256 of its content: it tells an edited file, but anyone can compute it for
a file they wrote. So an apply takes nothing on the file's word:

- :func:`check_matches`: the plan was made for the pipeline as declared now (sink, topic);
- :func:`stored_plan`: the plan is one ``recon repair plan`` recorded in ``recon.repairs`` (the
  apply goes on with that record, not the file);
- :func:`check_results`: each delete, kept row and replay has its verdict (and a replay its
  position) in the run's ``recon.discrepancies``, and each duplicated message keeps a row;
- :func:`check_sink`: the sink table's primary key, its columns and their types, as the catalog
  has them now, equal to the plan's; the SQL the apply runs is built from the declared pipeline
  and the catalog, its values bound, never from the plan's text;
- the delete bound (``repair.max_deletes``, ``repair.max_delete_ratio``): a plan deleting more
  rows, or a larger share of the table, is applied only by a person with ``--allow-over-bound``
  (the repair DAG never passes it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from recon.alert.text import shown
from recon.config import PipelineConfig, RepairSpec
from recon.repair.plan_model import RepairPlan, SinkTarget, plan_from_dict
from recon.repair.sink_rows import RepairRefused, affected_rows, key_columns, state_of
from recon.run.services import results_db, sink_db
from recon.store import ensure_schema
from recon.store import repairs as store
from recon.store.repairs import DELETED_VERDICTS, REPLAYED_VERDICTS, RepairRow

Say = Callable[[str], None]

#: Below this many rows (by the planner's estimate) a sink table is counted exactly for the bound.
EXACT_COUNT_BELOW = 1_000_000


class RepairBusy(RepairRefused):
    """Another apply of the plan is running now (a DAG run and a person at once)."""


class OverBound(RepairRefused):
    """The plan deletes more than the pipeline's bound; a person may apply it with a flag."""


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
            # A plan that writes sink rows writes them as the pipeline says now, or not at all.
            (
                "repair.sink_columns",
                plan.sink_columns,
                (cfg.repair.sink_columns if cfg.repair else ()) if plan.sink_columns else (),
            ),
        )
        if planned != now
    ]
    if differences:
        raise RepairRefused(
            f"plan {plan.plan_id} does not match pipeline '{cfg.name}' as declared now ("
            + "; ".join(differences)
            + "): nothing was changed"
        )


def stored_plan(plan: RepairPlan) -> tuple[RepairPlan, RepairRow]:
    """The plan as ``recon.repairs`` keeps it, and its row.

    :raises RepairRefused: no plan of this id and pipeline was recorded (a file written by hand,
        with an id computed to match).
    """
    with results_db() as pg:
        ensure_schema(pg)
        row = store.find_repair(pg, plan.plan_id)
    if row is None or row.pipeline != plan.pipeline:
        raise RepairRefused(
            f"pipeline '{plan.pipeline}': plan {shown(plan.plan_id)} is not recorded in "
            "recon.repairs (`recon repair plan` records each plan it makes; a plan file alone "
            "is never applied): nothing was changed"
        )
    where = f"pipeline '{plan.pipeline}': plan {plan.plan_id} in recon.repairs"
    return plan_from_dict(row.plan, where), row


def check_results(plan: RepairPlan) -> None:
    """:raises RepairRefused: a change of the plan has no verdict for it in the run's results
    (a delete of a message the run judged otherwise, a replay of another position), or a
    duplicated message would keep no row."""
    ids = sorted({d.message_id for d in plan.deletes} | set(plan.kept)
                 | {r.message_id for r in plan.replays})  # fmt: skip
    if not ids:
        return
    with results_db() as pg:
        judged = store.judged_rows(pg, plan.pipeline, plan.run_id, ids)
    verdicts = {(v, m) for v, m, _, _ in judged}
    wrong = [
        f"delete {shown(d.message_id)!r} as {shown(d.verdict)}"
        for d in plan.deletes
        if d.verdict not in DELETED_VERDICTS or (d.verdict, d.message_id) not in verdicts
    ]
    wrong += [
        f"delete every row of duplicated {shown(d.message_id)!r}"
        for d in plan.deletes
        if d.verdict == "duplicated" and d.message_id not in plan.kept
    ]
    wrong += [f"keep a row of {shown(m)!r} as duplicated" for m in plan.kept
              if ("duplicated", m) not in verdicts]  # fmt: skip
    wrong += [
        f"replay {shown(r.message_id)!r} from {r.partition}@{r.offset}"
        for r in plan.replays
        if r.verdict not in REPLAYED_VERDICTS
        or (r.verdict, r.message_id, r.partition, r.offset) not in judged
    ]
    if wrong:
        raise RepairRefused(
            f"pipeline '{plan.pipeline}': plan {plan.plan_id} does not match run "
            f"{shown(plan.run_id)!r} in recon.discrepancies: {len(wrong)} of its changes have "
            f"no such verdict there ({'; '.join(wrong[:3])}): nothing was changed; make a new "
            "plan with `recon repair plan`"
        )


def table_rows(pg: Any, table: str) -> int:
    """How many rows ``table`` has: counted, or the planner's estimate for a large table (a
    share's bound needs no exact count of a billion rows)."""
    from psycopg2 import sql

    from recon.config.model import split_table

    name = sql.Identifier(*split_table(table))
    with pg.cursor() as cur:
        cur.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass",
                    (name.as_string(pg),))  # fmt: skip
        estimate = int(cur.fetchone()[0])
        if estimate >= EXACT_COUNT_BELOW:
            return estimate
        cur.execute(sql.SQL("SELECT count(*) FROM {}").format(name))
        return int(cur.fetchone()[0])


def over_bound(deletes: int, rows: int, bound: RepairSpec) -> str | None:
    """Which key of the bound ``deletes`` of a table of ``rows`` exceeds (None: within it; each
    limit itself is allowed)."""
    if deletes > bound.max_deletes:
        return f"repair.max_deletes is {bound.max_deletes}"
    share = deletes / rows if rows else float(deletes > 0)
    if share > bound.max_delete_ratio:
        return f"repair.max_delete_ratio is {bound.max_delete_ratio:g}"
    return None


def check_sink(plan: RepairPlan, cfg: PipelineConfig, say: Say, *, dry_run: bool,
               allow_over_bound: bool) -> SinkTarget:  # fmt: skip
    """The sink as the apply addresses it: the pipeline's table, its key from the catalog.
    A plan whose deletes are still to make (the sink as planned) is held to the bound.

    :raises RepairRefused: the catalog's primary key is not the plan's.
    :raises OverBound: above the bound, without ``allow_over_bound`` (not for a dry run, which
        says so).
    """
    with sink_db(cfg) as pg:
        try:
            keys, types = key_columns(pg, cfg.sink.table)
            if (keys, types) != (plan.sink.key_columns, plan.sink.key_types):
                raise RepairRefused(
                    f"pipeline '{cfg.name}': the primary key of sink.table {cfg.sink.table} in "
                    f"the catalog is ({_columns(keys, types)}), plan {plan.plan_id} was made for "
                    f"({_columns(plan.sink.key_columns, plan.sink.key_types)}): nothing was "
                    "changed; make a new plan with `recon repair plan`"
                )
            target = SinkTarget(cfg.sink.connection, cfg.sink.table, cfg.sink.message_id_column,
                                keys, types)  # fmt: skip
            pending = bool(plan.deletes) and plan.before == state_of(
                affected_rows(pg, target, plan.state_ids(), None))  # fmt: skip
            if pending:
                _bound(plan, cfg, table_rows(pg, cfg.sink.table), say, dry_run=dry_run,
                       allow=allow_over_bound)  # fmt: skip
            return target
        finally:
            pg.rollback()


def _bound(plan: RepairPlan, cfg: PipelineConfig, rows: int, say: Say, *, dry_run: bool,
           allow: bool) -> None:  # fmt: skip
    n = len(plan.deletes)
    why = over_bound(n, rows, cfg.repair or RepairSpec())
    if why is None:
        return
    share = f"{n / rows:.0%}" if rows else "all"
    what = (f"plan {plan.plan_id} deletes {n} of {rows} rows of sink.table {cfg.sink.table} "
            f"({share}), above the bound ({why})")  # fmt: skip
    if dry_run:
        say(f"bound: {what}: applying it needs a person and --allow-over-bound")
    elif allow:
        say(f"bound: {what}: applied over the pipeline's bound, as --allow-over-bound asks")
    else:
        raise OverBound(
            f"pipeline '{cfg.name}': {what}: nothing was changed; check it with `recon repair "
            "apply PLAN --dry-run`; a person may apply it with --allow-over-bound (the repair "
            "DAG never does), or declare a larger bound under repair:"
        )


def _columns(keys: tuple[str, ...], types: tuple[str, ...]) -> str:
    return ", ".join(f"{shown(k)} {shown(t)}" for k, t in zip(keys, types, strict=False))
