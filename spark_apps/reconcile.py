"""spark-submit entry point for one reconciliation step of one pipeline run.

    spark-submit --master local[*] spark_apps/reconcile.py --pipeline payments \
        --run-id scheduled__2026-01-01T00:00:00+00:00 --step all

Steps: ``snapshot_offsets``, ``snapshot_topic``, ``reconcile``, ``validate`` (exit 1 when the
contract is broken) or ``all``. The same functions
``recon run`` and the Airflow tasks call (``recon.run.steps``); the master comes from spark-submit.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

STEPS = ("snapshot_offsets", "snapshot_topic", "reconcile", "validate", "all")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="reconcile.py", description=__doc__.split("\n")[0])
    parser.add_argument("--pipeline", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--step", choices=STEPS, default="all")
    parser.add_argument("--pipelines", help="pipeline YAML (default: $RECON_PIPELINES)")
    parser.add_argument("--data-dir", help="windows and ledger location")
    parser.add_argument("--summary-file", help="write the run summary here as JSON")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from recon.config import load_pipelines
    from recon.errors import ReconError
    from recon.run import steps as engine
    from recon.stack.preflight import get_pipeline

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        cfg = get_pipeline(load_pipelines(args.pipelines), args.pipeline)
        if args.step == "snapshot_offsets":
            engine.snapshot_offsets(cfg, args.run_id, progress=progress)
            return 0
        from pyspark.sql import SparkSession

        # Under spark-submit the master and jars come from its command line.
        spark = SparkSession.builder.appName(f"recon-{cfg.name}").getOrCreate()
        try:
            if args.step == "snapshot_topic":
                engine.snapshot_topic(cfg, args.run_id, spark, data_dir=args.data_dir,
                                      progress=progress)  # fmt: skip
                return 0
            if args.step == "validate":
                outcome = engine.validate_step(cfg, args.run_id, spark, data_dir=args.data_dir,
                                               progress=progress)  # fmt: skip
                print(json.dumps({"passed": outcome.passed, "failures": outcome.failures},
                                 default=str))  # fmt: skip
                return 0 if outcome.passed else 1
            if args.step == "all":
                engine.snapshot_offsets(cfg, args.run_id, progress=progress)
                engine.snapshot_topic(cfg, args.run_id, spark, data_dir=args.data_dir,
                                      progress=progress)  # fmt: skip
            summary = engine.reconcile_run(cfg, args.run_id, spark, data_dir=args.data_dir,
                                           progress=progress)  # fmt: skip
        finally:
            spark.stop()
    except ReconError as exc:
        print(f"reconcile: error: {exc}", file=sys.stderr)
        return 2
    payload = json.dumps(dataclasses.asdict(summary), default=str)
    if args.summary_file:
        with open(args.summary_file, "w", encoding="utf-8") as fh:
            fh.write(payload)
    print(payload)
    # The reconcile step succeeded whatever it found; the validate step (or `all`) decides.
    return 0 if args.step == "reconcile" or summary.contract_passed else 1


if __name__ == "__main__":
    sys.exit(main())
