#!/usr/bin/env bash
# Stops every process of the project: Airflow's process group, the Spark Connect server, the Kafka
# Connect worker, both Kafka clusters, PostgreSQL, and any Spark or workload process left behind
# by an interrupted run.
set -uo pipefail
. "$(dirname "$0")/env.sh"
here="$(dirname "$0")"
bash "$here/catcher.sh" stop
bash "$here/airflow.sh" stop
bash "$here/spark-connect.sh" stop
bash "$here/connect.sh" stop
bash "$here/kafka-replica.sh" stop
bash "$here/kafka.sh" stop
bash "$here/postgres.sh" stop
# Stragglers: anything still running from this checkout's .venv or jars (a killed test run's Spark
# driver or workload consumer).
left=$(pgrep -f -- "$RECON_VENV/bin/|$RECON_STATE/jars/" || true)
if [ -n "$left" ]; then
  say "stopping leftover processes: $(echo $left)"
  kill -TERM $left 2>/dev/null || true
  sleep 3
  kill -KILL $left 2>/dev/null || true
fi
exit 0
