#!/usr/bin/env bash
# `make bench`: measures the product against its peers on this machine and writes
# docs/benchmarks.md and docs/benchmarks.png. Starts PostgreSQL and Kafka if they are not running
# and stops, at the end, only what it started. Options pass through to `python -m bench.run`
# (--sizes, --reps, --only, --keep: re-measure the --only figures, keep the others from the last
# run); RECON_BENCH_* variables do the same.
set -euo pipefail
. "$(dirname "$0")/env.sh"
here="$(dirname "$0")"

# The bench measures both ways of running Spark side by side: a JVM per run by default, and the
# Spark Connect figures on a server it starts itself (bench/connect.py).
export RECON_SPARK_REMOTE=""
note_stopped_services postgres kafka kafka-replica connect
trap stop_started EXIT

say "starting the services the bench needs (PostgreSQL, Kafka, Kafka Connect and the replica cluster)"
bash "$here/up.sh" --no-airflow
cd "$RECON_ROOT"
# Airflow is started by P5 itself (bench/scheduled.py), with the environment each of its figures
# needs, and left as it was found.
say "bench: every figure takes a while; progress lines below (about an hour in all)"
python -m bench.run "$@"
