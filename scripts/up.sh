#!/usr/bin/env bash
# Starts the services: PostgreSQL, Kafka, the replica Kafka, the Kafka Connect worker, the
# project's Spark Connect server when runs are to attach to it
# (RECON_SPARK_REMOTE=$RECON_SPARK_CONNECT_URL), and (unless --no-airflow) Airflow, whose Spark
# steps then attach to it too. Idempotent.
set -euo pipefail
. "$(dirname "$0")/env.sh"
here="$(dirname "$0")"
bash "$here/postgres.sh" start
bash "$here/kafka.sh" start
# The replica cluster and the Connect worker need only the broker above: side by side they start
# in about 15 s, one after the other in 26.
bash "$here/kafka-replica.sh" start &
replica_start=$!
bash "$here/connect.sh" start || { wait "$replica_start" || true; exit 1; }
wait "$replica_start" || die "the replica Kafka did not start (above)"
if [ "${RECON_SPARK_REMOTE:-}" = "$RECON_SPARK_CONNECT_URL" ]; then
  bash "$here/spark-connect.sh" start
fi
if [ "${1:-}" != "--no-airflow" ]; then bash "$here/airflow.sh" start; fi
