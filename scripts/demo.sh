#!/usr/bin/env bash
# The demo: the stack, a mail/webhook catcher, five pipelines fed by the fault-injecting workload,
# their reconciliation DAGs run by Airflow, and the verdict table.
set -euo pipefail
. "$(dirname "$0")/env.sh"
here="$(dirname "$0")"
bash "$here/catcher.sh" start
bash "$here/up.sh"
say "smoke: transactional producer -> read_committed consumer -> PostgreSQL, counted by Spark"
python -m recon.stack.smoke 2> "$RECON_STATE/smoke.log" || die "the smoke pipeline failed: see $RECON_STATE/smoke.log"
python -m recon_workload.demo
