#!/usr/bin/env bash
# The project's Spark Connect server: one long-lived Spark driver on loopback that `engine: spark`
# runs attach to (RECON_SPARK_REMOTE=$RECON_SPARK_CONNECT_URL) instead of starting
# a JVM each. Its settings are every product driver's (recon.spark.connect_server_command); clients
# authenticate with the token in secrets.env (SPARK_CONNECT_AUTHENTICATE_TOKEN, never on a command
# line).   usage: spark-connect.sh start|stop|status
set -euo pipefail
. "$(dirname "$0")/env.sh"

dir="$RECON_STATE/spark-connect"
pidfile="$dir/server.pid"
log="$dir/server.log"

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

start() {
  if running; then say "Spark Connect already running on 127.0.0.1:$RECON_SPARK_CONNECT_PORT"; return 0; fi
  [ -n "${SPARK_CONNECT_AUTHENTICATE_TOKEN:-}" ] \
    || die "no Spark Connect token in $RECON_STATE/secrets.env: run 'make setup'"
  port_taken "$RECON_SPARK_CONNECT_PORT" \
    && die "port $RECON_SPARK_CONNECT_PORT is in use by another process: stop it or set RECON_SPARK_CONNECT_PORT"
  mkdir -p "$dir"
  # One log per start, the previous one kept: an appended log grew without end, and a stale
  # "started" line in it must not pass for this start's.
  if [ -f "$log" ]; then mv -f "$log" "$log.1"; fi
  say "starting Spark Connect on 127.0.0.1:$RECON_SPARK_CONNECT_PORT (log: $log)"
  # The Python workers (the window's readers run in them) need the package: this venv's python.
  # Built into a file first: a failure of a process substitution would pass `set -e` unseen.
  local built="$dir/server.command"
  "$RECON_VENV/bin/python" -c '
import os, sys
from recon.errors import ConfigError
from recon.spark import connect_server_command
try:
    command = connect_server_command(int(os.environ["RECON_SPARK_CONNECT_PORT"]))
except ConfigError as exc:
    sys.exit(f"recon: {exc}")
sys.stdout.write("\0".join(command))' \
    > "$built" || die "could not build the Spark Connect server's command line (above)"
  mapfile -d '' command < "$built"
  mkdir -p "$dir/conf"
  cp "$(dirname "$0")/spark-connect-log4j2.properties" "$dir/conf/log4j2.properties"
  SPARK_CONF_DIR="$dir/conf" PYSPARK_PYTHON="$RECON_VENV/bin/python" \
    setsid "${command[@]}" >"$log" 2>&1 < /dev/null &
  echo $! > "$pidfile"
  for _ in $(seq 1 120); do
    if ! running; then rm -f "$pidfile"; die "Spark Connect exited while starting: see $log"; fi
    if grep -q "Spark Connect server started" "$log" 2>/dev/null && port_open "$RECON_SPARK_CONNECT_PORT"; then
      say "Spark Connect is up"; return 0
    fi
    sleep 1
  done
  die "Spark Connect did not start within 120 s: see $log"
}

# Its process group: the JVM and its Python workers go together.
stop() { stop_pidfile "Spark Connect" "$pidfile" 30; }

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) if running; then echo "Spark Connect running (pid $(cat "$pidfile")) on 127.0.0.1:$RECON_SPARK_CONNECT_PORT"; else echo "Spark Connect stopped"; exit 3; fi ;;
  *) die "usage: $0 start|stop|status" ;;
esac
