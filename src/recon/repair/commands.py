"""``recon repair plan|apply|list``: the command line of :mod:`recon.repair`."""

from __future__ import annotations

import argparse
import json

from recon.alert.text import shown


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    repair = sub.add_parser("repair", help="plan, apply and list repairs of a run's results")
    actions = repair.add_subparsers(dest="repair_command", required=True)
    plan = actions.add_parser("plan", help="write the plan that repairs a run's results")
    plan.add_argument("--pipeline", required=True)
    plan.add_argument("--run-id", help="the run to repair (default: the newest judged run)")
    plan.add_argument("--replay-topic", help="replay lost records to this topic (default: the "
                      "pipeline's own, each to its partition)")  # fmt: skip
    plan.add_argument(
        "--write-sink", action="store_true",
        help="write lost messages' sink rows from their records (repair.sink_columns) instead "
        "of producing the records again",
    )  # fmt: skip
    plan.add_argument("--out", help="the plan file (default: DATA_DIR/repairs/PIPELINE/ID.json)")
    plan.add_argument("--data-dir", help="where runs keep their files (default: .state/data)")
    plan.add_argument("--json", action="store_true", help="print the plan itself")
    apply = actions.add_parser("apply", help="apply a plan (sink deletes, then replays)")
    apply.add_argument("plan", help="the plan file")
    apply.add_argument(
        "--dry-run", action="store_true",
        help="print the SQL and the records it would produce; change nothing",
    )  # fmt: skip
    apply.add_argument(
        "--allow-over-bound", action="store_true",
        help="apply deletes above the pipeline's bound (repair.max_deletes, "
        "repair.max_delete_ratio): a person's decision, after a dry run; the DAG never does",
    )  # fmt: skip
    listing = actions.add_parser("list", help="a pipeline's repair plans and their state")
    listing.add_argument("--pipeline", required=True)
    listing.add_argument("--json", action="store_true")


def summary_lines(plan: object) -> list[str]:
    """A plan as a person reads it: what it replays, deletes and cannot repair."""
    from recon.repair.plan_model import RepairPlan

    assert isinstance(plan, RepairPlan)
    lines = [f"repair plan {plan.plan_id} for pipeline {plan.pipeline}, run {shown(plan.run_id)}"]
    if plan.replays and plan.replay_mode == "sink":
        lines.append(f"  write the sink rows of {len(plan.replays)} lost records of "
                     f"{shown(plan.topic)} into {shown(plan.sink.table)} "
                     f"({', '.join(c for c, _, _ in plan.sink_columns)}):")  # fmt: skip
    elif plan.replays:
        lines.append(f"  replay {len(plan.replays)} lost records from {shown(plan.topic)} to "
                     f"{shown(plan.replay_topic)}:")  # fmt: skip
        lines += [
            f"    {shown(r.message_id)} at {r.partition}@{r.offset}" for r in plan.replays[:20]
        ]
    if plan.deletes:
        lines.append(f"  delete {len(plan.deletes)} sink rows of {shown(plan.sink.table)} by "
                     f"({', '.join(plan.sink.key_columns)}):")  # fmt: skip
        lines += [f"    {d.verdict} {shown(d.message_id)} key {shown(','.join(d.key))}"
                  for d in plan.deletes[:20]]  # fmt: skip
    if plan.kept:
        lines.append(f"  keep the first row (by {shown(plan.kept_by)}) of each of "
                     f"{len(plan.kept)} duplicated messages")  # fmt: skip
    for n in plan.not_replayable[:20]:
        lines.append(f"  not replayable: {shown(n.message_id)}: {n.reason}")
    lines.append(f"  sink state planned against: {plan.before.rows} rows, "
                 f"checksum {plan.before.checksum[:16]}")  # fmt: skip
    return lines


def run(args: argparse.Namespace) -> int:
    from recon.config import load_pipelines
    from recon.stack.preflight import check_pipeline, get_pipeline

    if args.repair_command == "apply":
        from recon.repair.applier import apply_plan
        from recon.repair.plan_model import read_plan

        plan = read_plan(args.plan)
        cfg = get_pipeline(load_pipelines(args.pipelines), plan.pipeline)
        check_pipeline(cfg)
        result = apply_plan(plan, cfg, dry_run=args.dry_run,
                            allow_over_bound=args.allow_over_bound)  # fmt: skip
        if result.status == "applied":
            print(f"plan {plan.plan_id}: applied: {result.deleted} sink rows deleted, "
                  f"{result.replayed} records replayed ({result.already_replayed} by an earlier "
                  f"apply), {len(result.not_replayable)} not replayable; the next run of "
                  f"{plan.pipeline} verifies it")  # fmt: skip
        return 0
    cfg = get_pipeline(load_pipelines(args.pipelines), args.pipeline)
    if args.repair_command == "list":
        return _list(cfg.name, args.json)
    check_pipeline(cfg)  # connections, topic, sink table and columns: named before anything
    return _plan(cfg, args)


def _plan(cfg: object, args: argparse.Namespace) -> int:
    from recon.repair.plan_model import plan_to_json
    from recon.repair.planner import NothingToRepair, make_plan, save_plan

    try:
        plan = make_plan(cfg, args.run_id, args.replay_topic,  # type: ignore[arg-type]
                         write_sink=args.write_sink)  # fmt: skip
    except NothingToRepair as exc:
        print(str(exc))
        return 0
    path = save_plan(plan, args.out, args.data_dir)
    if args.json:
        print(plan_to_json(plan), end="")
    else:
        print("\n".join(summary_lines(plan)))
        print(f"  plan file: {path}")
        print(f"  next: recon repair apply {path} --dry-run, then without --dry-run")
    return 0


def _list(pipeline: str, as_json: bool) -> int:
    from recon.run.services import results_db
    from recon.store import ensure_schema
    from recon.store.repairs import list_repairs

    with results_db() as pg:
        ensure_schema(pg)
        rows = list_repairs(pg, pipeline)
    if as_json:
        print(json.dumps([{k: v for k, v in r.__dict__.items() if k != "plan"} for r in rows],
                         default=str, indent=2))  # fmt: skip
        return 0
    if not rows:
        print(f"pipeline {pipeline}: no repair plans")
    for r in rows:
        print(f"{r.created_at:%F %T}  {r.plan_id}  run {shown(r.run_id)}  {r.status:<9}"
              + (f"  {shown(r.detail, 200)}" if r.detail else ""))  # fmt: skip
    return 0
