#!/usr/bin/env bash
# Starts the services: PostgreSQL, Kafka, and (unless --no-airflow) Airflow. Idempotent.
set -euo pipefail
here="$(dirname "$0")"
bash "$here/postgres.sh" start
bash "$here/kafka.sh" start
if [ "${1:-}" != "--no-airflow" ]; then bash "$here/airflow.sh" start; fi
