#!/usr/bin/env bash
# The demo: starts the stack and runs the smoke pipeline. Later issues grow it into the full
# reconciliation demo.
set -euo pipefail
. "$(dirname "$0")/env.sh"
here="$(dirname "$0")"
bash "$here/up.sh"
say "smoke pipeline: transactional producer -> read_committed consumer -> PostgreSQL, counted by Spark"
python -m recon.smoke 2> "$RECON_STATE/smoke.log" || die "the smoke pipeline failed: see $RECON_STATE/smoke.log"
say "Airflow UI: http://127.0.0.1:$RECON_AIRFLOW_PORT   login: admin / $RECON_AIRFLOW_ADMIN_PASSWORD"
say "stop everything with: make down"
