#!/usr/bin/env bash
# The project's Airflow: api-server, scheduler, dag-processor and triggerer under
# scripts/airflow_supervisor.py, which restarts any that exits, in its own process group; metadata
# in the project's PostgreSQL, UI on loopback.
# usage: airflow.sh init|start|stop|status
set -euo pipefail
. "$(dirname "$0")/env.sh"

dir="$AIRFLOW_HOME"
pidfile="$dir/supervisor.pid"
log="$dir/airflow.log"
url="http://127.0.0.1:$RECON_AIRFLOW_PORT"

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

init() {
  [ -n "${RECON_AIRFLOW_ADMIN_PASSWORD:-}" ] || die "no Airflow admin password: run 'make setup' first"
  mkdir -p "$dir"
  rm -f "$dir/passwords.json"  # an older file may be readable by others: written anew
  printf '{"admin": "%s"}\n' "$RECON_AIRFLOW_ADMIN_PASSWORD" | write_private "$dir/passwords.json"
  local stamp="$dir/.migrated"
  local want
  want=$(airflow version 2>/dev/null)
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    say "migrating Airflow's metadata database (PostgreSQL, database $RECON_PG_AIRFLOW_DB)"
    airflow db migrate >"$dir/migrate.log" 2>&1 || die "airflow db migrate failed: see $dir/migrate.log"
    echo "$want" > "$stamp"
  fi
  if ! airflow pools get recon_spark >/dev/null 2>&1; then
    # Spark steps of all pipelines share two slots: more concurrent drivers thrash 2 cores.
    airflow pools set recon_spark "${RECON_SPARK_SLOTS:-2}" "Spark steps of reconciliation runs" \
      >/dev/null 2>&1 || die "could not create the Airflow pool recon_spark"
  fi
}

start() {
  if running; then say "Airflow already running at $url"; print_login; return 0; fi
  port_taken "$RECON_AIRFLOW_PORT" && die "port $RECON_AIRFLOW_PORT is in use by another process: stop it or set RECON_AIRFLOW_PORT"
  init
  say "starting Airflow (log: $log)"
  # Its own session and process group: the components fork children of their own (task runners,
  # parsers), and stopping the supervisor alone could leave them holding the port. stop() signals
  # the whole group.
  setsid python "$RECON_ROOT/scripts/airflow_supervisor.py" >>"$log" 2>&1 < /dev/null &
  echo $! > "$pidfile"
  # Up means every component's heartbeat is healthy, not only the API answering: a demo that
  # triggers runs before the scheduler and dag-processor are alive waits on nothing.
  local sick="no answer yet"
  for _ in $(seq 1 180); do
    running || die "Airflow exited while starting: see $log"
    sick=$(unhealthy) && { say "Airflow is up"; print_login; return 0; }
    sleep 1
  done
  die "Airflow not healthy within 180 s ($sick): see $log"
}

# Prints the components not reporting healthy and fails, or succeeds silently.
unhealthy() {
  curl -fsS "$url/api/v2/monitor/health" 2>/dev/null | python -c '
import json, sys
try:
    health = json.load(sys.stdin)
except ValueError:
    sys.exit("no answer yet")
sick = [c for c in ("metadatabase", "scheduler", "dag_processor", "triggerer")
        if health.get(c, {}).get("status") != "healthy"]
if sick:
    sys.exit("unhealthy: " + ", ".join(sick))
' 2>&1
}

print_login() {
  say "Airflow UI: $url   login: admin, password in $dir/passwords.json"
}

stop() {
  [ -f "$pidfile" ] || return 0
  local pgid
  pgid=$(cat "$pidfile")
  # The group, even when its leader died: its children (api-server, scheduler) may still run.
  if ! pgrep -g "$pgid" >/dev/null; then rm -f "$pidfile"; return 0; fi
  say "stopping Airflow (process group $pgid)"
  kill -TERM -- "-$pgid" 2>/dev/null || true
  for _ in $(seq 1 45); do
    pgrep -g "$pgid" >/dev/null || break
    sleep 1
  done
  kill -KILL -- "-$pgid" 2>/dev/null || true
  rm -f "$pidfile"
}

case "${1:-}" in
  init) init ;;
  start) start ;;
  stop) stop ;;
  status) if running; then echo "Airflow running at $url"; else echo "Airflow stopped"; exit 3; fi ;;
  *) die "usage: $0 init|start|stop|status" ;;
esac
