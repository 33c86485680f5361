"""``recon``: reconcile a pipeline outside Airflow, list its runs, validate the YAML, prune and
forget history.

Exit status: 0 the contract holds (or the command succeeded), 1 the contract is broken,
2 a user error (configuration, connection, missing topic or table), a failed service (Kafka
unreachable, PostgreSQL gone during the commit, the Spark driver dead, a concurrent run) or any
other failure of a run (marked ``error`` in ``recon.runs``), named in one line.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from datetime import UTC, datetime
from typing import Any

from recon import settings
from recon.alert.funnel import funnel_line
from recon.alert.text import shown
from recon.errors import ReconError, RunFailed, SparkDriverLost, first_line
from recon.model.details import unchecked_phrases

EXIT_OK, EXIT_CONTRACT_BROKEN, EXIT_USER_ERROR = 0, 1, 2
#: Verdicts whose sample lines end in the row's detail: the figures (late), the differing field
#: names (mismatched) or the key and both positions (out_of_order) are the whole point of the
#: line; other details repeat the verdict.
_DETAILED = ("late", "mismatched", "out_of_order", "unpublished")


def _progress(line: str) -> None:
    print(f"[{datetime.now(UTC):%H:%M:%S}] {line}", file=sys.stderr, flush=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="recon", description=__doc__.split("\n")[0])
    parser.add_argument("--pipelines", help="pipeline YAML (default: $RECON_PIPELINES)")
    sub = parser.add_subparsers(dest="command", required=True)

    check = sub.add_parser("check-config", help="validate the pipeline declarations")
    check.add_argument(
        "--connect",
        action="store_true",
        help="also check that connections resolve and the topic and sink table exist",
    )

    run = sub.add_parser("run", help="reconcile one pipeline now")
    run.add_argument("--pipeline", required=True)
    run.add_argument("--run-id", help="re-use an id to re-run a run (default: a new manual id)")
    run.add_argument("--data-dir", help="where windows and the ledger live (default: .state/data)")
    run.add_argument("--json", action="store_true", help="print the summary as JSON")
    run.add_argument(
        "--explain",
        action="store_true",
        help="print the run's plan (windows, sink read, engine, checks) and record nothing",
    )

    reset = sub.add_parser(
        "reset", help="forget a pipeline's watermarks and ledger pointer (history is kept)"
    )
    reset.add_argument("--pipeline", required=True)

    runs = sub.add_parser("runs", help="a pipeline's run history")
    runs.add_argument("--pipeline", required=True)
    runs.add_argument("--limit", type=int, default=20)
    runs.add_argument("--json", action="store_true")

    from recon.prune.commands import add_parser as add_prune
    from recon.repair.commands import add_parser as add_repair

    add_repair(sub)
    add_prune(sub)
    return parser


def _format_summary(summary: Any) -> str:
    lines = [
        f"pipeline {summary.pipeline}  run {shown(summary.run_id)}  claimed {summary.semantics}: "
        + ("CONTRACT HOLDS" if summary.contract_passed else "CONTRACT BROKEN"),
        "  " + "  ".join(f"{v}={n}" for v, n in summary.counts.items()),
        "  window: "
        + ", ".join(
            f"p{w['partition']}[{w['window_from']},{w['window_to']})" for w in summary.windows
        ),
    ]
    if summary.rewinds:
        lines.append(
            "  rewinds: "
            + ", ".join(f"p{r['partition']} {r['from']}->{r['to']}" for r in summary.rewinds)
        )
    for v in summary.violations:
        what = v.get("verdict") or v.get("rule")
        lines.append(
            f"  violation: {what}: observed {v.get('observed')}, allowed {v.get('allowed')}"
        )
    if summary.validation_url:
        lines.append(f"  Data Docs: {summary.validation_url}")
    if summary.latency and summary.latency["overall"]:
        o, bound = summary.latency["overall"], summary.latency["bound_ms"]
        lines.append(
            f"  latency (ms, sink time minus {summary.latency['timestamp_type'] or 'Kafka time'}) "
            f"over {o['messages']} messages: p50 {o['p50_ms']}, p95 {o['p95_ms']}, "
            f"p99 {o['p99_ms']}, max {o['max_ms']}"
            + (f"; bound {bound}" if bound is not None else "")
            + (f"; {o['negative']} negative (sink clock behind Kafka)" if o["negative"] else "")
        )
    if summary.unchecked:
        lines.append(f"  not checked: {'; '.join(unchecked_phrases(summary.unchecked))}")
    way = funnel_line(summary.funnel)
    if way is not None:
        lines.append(f"  {way}")
    for verdict, sample in summary.samples.items():
        for s in sample[:5]:
            # The ids, keys and topic come from the data: escaped (recon.alert.text.shown), so
            # that none can move the terminal's cursor, recolour it or forge a line.
            where = f"{shown(s['topic'])}[{s['partition']}]@{','.join(map(str, s['offsets']))}"
            if s["topic"] is None:  # an unpublished message or a source row: not in the topic
                where = "no position in the topic"
            # late: its latency and bound; mismatched: the differing fields (names, never values);
            # out_of_order: the key, the position its row holds and the newest record's
            said = (
                f"; {shown(s['detail'], 500)}" if verdict in _DETAILED and s.get("detail") else ""
            )
            mid = shown(s["message_id"])
            lines.append(f"  {verdict}: {mid} at {where} sink rows {s['sink_count']}{said}")
    lines.append(
        f"  {summary.discrepancies} discrepancy rows in recon.discrepancies; "
        f"{summary.sink_rows_scanned} sink rows scanned; {summary.duration_seconds:.1f} s"
    )
    return "\n".join(lines)


def _check_config(args: argparse.Namespace) -> int:
    from recon.config import load_pipelines

    pipelines = load_pipelines(args.pipelines)
    if args.connect:
        from recon.stack.preflight import check_pipeline

        for cfg in pipelines.values():
            check_pipeline(cfg)
    print(f"{len(pipelines)} pipelines OK: {', '.join(sorted(pipelines))}")
    from recon.read.sink_copy import read_way

    for name in sorted(pipelines):
        way, why = read_way(pipelines[name])
        print(f"  {name}: new sink rows found by {way}: {why}")
    return EXIT_OK


def _gateway_refused(exc: BaseException) -> bool:
    """Whether a failed call (or anything it was raised from) is a connection to the JVM refused."""
    from py4j.protocol import Py4JNetworkError

    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, (Py4JNetworkError, ConnectionError)):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _driver_lost(spark: Any, exc: BaseException, grace_seconds: float = 10.0) -> bool:
    """Whether the Spark driver of this run went away under ``exc``: the JVM that pyspark
    launched for this process died, or the Spark Connect server it attached to is gone.

    A killed JVM closes its gateway socket a moment before the process can be reaped, so a
    refused connection with the process still listed is given ``grace_seconds`` to exit.
    """
    import subprocess

    from recon.spark import is_remote, server_unreachable

    if is_remote(spark):
        return server_unreachable(exc)
    proc = getattr(spark.sparkContext._gateway, "proc", None)
    if proc is None:
        return False
    if proc.poll() is not None:
        return True
    if not _gateway_refused(exc):
        return False
    try:
        proc.wait(timeout=grace_seconds)
    except subprocess.TimeoutExpired:
        return False
    return True


def _run(args: argparse.Namespace) -> int:
    from recon.config import load_pipelines
    from recon.run.ids import check_run_id
    from recon.run.steps import needs_spark
    from recon.stack.preflight import check_pipeline, get_pipeline

    cfg = get_pipeline(load_pipelines(args.pipelines), args.pipeline)
    run_id = check_run_id(
        args.run_id or f"manual__{datetime.now(UTC):%Y-%m-%dT%H:%M:%S.%fZ}", cfg.name
    )
    check_pipeline(cfg)
    if args.explain:
        return _explain(cfg, run_id, args)
    _progress(f"pipeline {cfg.name}: run {run_id} ({cfg.semantics})")
    # An `engine: local` pipeline runs every step in this process: no SparkSession, no JVM.
    run = _run_on_spark if needs_spark(cfg) else _run_local
    return _report(cfg, run_id, run(cfg, run_id, args), args)


def _explain(cfg: Any, run_id: str, args: argparse.Namespace) -> int:
    """``recon run --explain``: the plan a run would follow, resolved as step 1 resolves it."""
    from recon.engines.plan import explain, resolve_plan
    from recon.run.services import default_data_dir, results_db
    from recon.store import ensure_schema, load_state

    with results_db() as pg:
        ensure_schema(pg)
        base = load_state(pg, cfg.name)
    for line in explain(resolve_plan(cfg, run_id, base), args.data_dir or default_data_dir()):
        print(shown(line, limit=2000))
    return EXIT_OK


def _run_failed(cfg: Any, run_id: str, exc: Exception) -> RunFailed:
    from recon.run.steps import redact

    return RunFailed(
        f"pipeline '{cfg.name}': run '{run_id}' failed: "
        f"{redact(f'{type(exc).__name__}: {first_line(exc)}', cfg)}; it is marked error "
        "in recon.runs and committed nothing"
    )


def _run_local(cfg: Any, run_id: str, args: argparse.Namespace) -> Any:
    from recon.run.steps import run_pipeline

    try:
        return run_pipeline(cfg, run_id, None, data_dir=args.data_dir, progress=_progress)
    except ReconError:
        raise
    except Exception as exc:
        raise _run_failed(cfg, run_id, exc) from None


def _run_on_spark(cfg: Any, run_id: str, args: argparse.Namespace) -> Any:
    """The run with a SparkSession of its own, stopped after; a dead driver is named as such."""
    from recon.run.steps import run_pipeline
    from recon.spark import driver_gone, is_remote, spark_session

    spark = spark_session(f"recon-{cfg.name}")
    if not is_remote(spark):  # a Spark Connect server's log is its own
        spark.sparkContext.setLogLevel("ERROR")
    driver_lost = False
    try:
        return run_pipeline(cfg, run_id, spark, data_dir=args.data_dir, progress=_progress)
    except ReconError:
        raise
    except Exception as exc:
        driver_lost = _driver_lost(spark, exc)
        if not driver_lost:
            raise _run_failed(cfg, run_id, exc) from None
        remote = settings.spark_remote() if is_remote(spark) else None
        raise SparkDriverLost(
            f"{driver_gone(cfg.name, remote, f'run {run_id!r}', exc)}; a run commits all of "
            "its results or none: run it again with the same run id"
        ) from None
    finally:
        if not driver_lost:
            spark.stop()


def _report(cfg: Any, run_id: str, summary: Any, args: argparse.Namespace) -> int:
    import dataclasses

    if not summary.contract_passed:
        from recon.alert.for_run import alert_for_run

        sent = alert_for_run(cfg, run_id)["channels"]
        _progress("alerts: " + (", ".join(f"{c} {s}" for c, s in sent.items()) or "none"))
    if args.json:
        print(json.dumps(dataclasses.asdict(summary), default=str, indent=2))
    else:
        print(_format_summary(summary))
    return EXIT_OK if summary.contract_passed else EXIT_CONTRACT_BROKEN


def _runs(args: argparse.Namespace) -> int:
    from recon import store
    from recon.config import load_pipelines
    from recon.run.services import results_db
    from recon.stack.preflight import get_pipeline

    cfg = get_pipeline(load_pipelines(args.pipelines), args.pipeline)
    with results_db() as pg:
        store.ensure_schema(pg)
        rows = store.list_runs(pg, cfg.name, args.limit)
    if args.json:
        print(json.dumps(rows, default=str, indent=2))
        return EXIT_OK
    if not rows:
        print(f"pipeline {cfg.name}: no runs yet")
    for r in rows:
        counts = " ".join(f"{k}={v}" for k, v in (r["counts"] or {}).items() if v)
        print(f"{r['started_at']:%F %T}  {shown(r['run_id'])}  {r['status']:<7}  {counts}")
        if r.get("unchecked"):
            print(f"    not checked: {'; '.join(unchecked_phrases(r['unchecked']))}")
    return EXIT_OK


def _reset(args: argparse.Namespace) -> int:
    from recon import store
    from recon.config import load_pipelines
    from recon.run.services import results_db
    from recon.stack.preflight import get_pipeline

    cfg = get_pipeline(load_pipelines(args.pipelines), args.pipeline)
    with results_db() as pg:
        store.ensure_schema(pg)
        removed = store.reset_pipeline(pg, cfg.name)
    print(f"pipeline {cfg.name}: reset ({removed} partition watermarks removed)")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # py4j logs a broken gateway call with a traceback (on the root logger, too); the error line
    # below says what happened.
    logging.getLogger("py4j").setLevel(logging.CRITICAL)
    logging.getLogger().addFilter(lambda record: f"{os.sep}py4j{os.sep}" not in record.pathname)
    from recon.prune.commands import run as prune
    from recon.prune.commands import run_forget as forget
    from recon.repair.commands import run as repair

    handlers = {"check-config": _check_config, "run": _run, "runs": _runs, "reset": _reset,
                "repair": repair, "prune": prune, "forget": forget}  # fmt: skip
    try:
        return handlers[args.command](args)
    except ReconError as exc:
        print(f"recon: error: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    except Exception as exc:  # never a traceback: one line, and the status of a failure
        print(f"recon: error: {type(exc).__name__}: {first_line(exc)}", file=sys.stderr)
        return EXIT_USER_ERROR


if __name__ == "__main__":
    sys.exit(main())
