"""One product run as a user runs it, in its own process: ``recon run`` without the Great
Expectations step (P1 measures snapshot -> verdicts committed; P5 measures the whole DAG).

    python -m bench.product --pipelines FILE --pipeline NAME --run-id ID [--fresh]

The JVM start is inside the measured time, as it is for every scheduled run. Prints one JSON line:
step timings, verdict counts, discrepancy rows written.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.product")
    parser.add_argument("--pipelines", required=True)
    parser.add_argument("--pipeline", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--fresh", action="store_true", help="forget the pipeline's state first")
    args = parser.parse_args(argv)

    from recon import store
    from recon.config import load_pipelines
    from recon.run import steps as engine
    from recon.spark import spark_session

    def progress(line: str) -> None:
        print(f"[{time.monotonic() - marks['start']:7.1f}] {line}", file=sys.stderr, flush=True)

    cfg = load_pipelines(args.pipelines)[args.pipeline]
    marks: dict[str, float] = {"start": time.monotonic()}
    if args.fresh:  # outside the timing: a repetition starts from the same empty state
        with engine.results_db() as pg:
            store.ensure_schema(pg)
            store.forget_pipeline(pg, cfg.name)
    marks["start"] = time.monotonic()
    # The local engine needs no JVM: a user of it starts none.
    spark = spark_session(f"bench-{cfg.name}") if cfg.engine == "spark" else None
    marks["session"] = time.monotonic()
    engine.snapshot_offsets(cfg, args.run_id, progress=progress)
    marks["snapshot_offsets"] = time.monotonic()
    engine.snapshot_topic(cfg, args.run_id, spark, progress=progress)
    marks["snapshot_topic"] = time.monotonic()
    summary = engine.reconcile_run(cfg, args.run_id, spark, progress=progress)
    marks["reconcile"] = time.monotonic()
    names = list(marks)
    steps = {b: round(marks[b] - marks[a], 3) for a, b in zip(names, names[1:], strict=False)}
    total = round(marks["reconcile"] - marks["start"], 3)
    print(json.dumps({"steps": steps, "seconds": total, "counts": summary.counts,
                      "discrepancies": summary.discrepancies,
                      "funnel": summary.funnel}))  # fmt: skip
    if spark is not None:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
