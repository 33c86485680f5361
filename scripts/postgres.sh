#!/usr/bin/env bash
# The project's PostgreSQL: a cluster in .state/pg owned by a non-root OS user, TCP on loopback
# only, password authentication; databases for the sink, the product's results and Airflow.
# usage: postgres.sh start|stop|status
set -euo pipefail
. "$(dirname "$0")/env.sh"

bindir=$(dirname "$(ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1)")
pgdir="$RECON_STATE/pg"
data="$pgdir/data"
log="$pgdir/postgres.log"

as_owner() { runuser -u "$RECON_PG_OS_USER" -- "$@"; }
running() { [ -f "$data/postmaster.pid" ] && as_owner "$bindir/pg_ctl" -D "$data" status >/dev/null 2>&1; }

# The cluster's owner must be able to walk down to .state/pg: a checkout under a private temporary
# directory is not, so grant search (not read) permission on the ancestors that lack it.
ensure_reachable() {
  local d="$pgdir"
  while [ "$d" != "/" ]; do
    if ! runuser -u "$RECON_PG_OS_USER" -- test -x "$d" 2>/dev/null && [ -d "$d" ]; then
      chmod o+x "$d"
    fi
    d=$(dirname "$d")
  done
}

psql_admin() {
  PGPASSWORD="$RECON_PG_PASSWORD" "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -h "$RECON_PG_HOST" \
    -p "$RECON_PG_PORT" -U "$RECON_PG_USER" "$@"
}

init() {
  [ -n "${RECON_PG_PASSWORD:-}" ] || die "no database password: run 'make setup' first"
  mkdir -p "$pgdir"
  chown "$RECON_PG_OS_USER" "$pgdir"
  ensure_reachable
  if [ ! -f "$data/PG_VERSION" ]; then
    say "creating the PostgreSQL cluster in $data"
    pwfile=$(mktemp)
    printf '%s\n' "$RECON_PG_PASSWORD" > "$pwfile"
    chown "$RECON_PG_OS_USER" "$pwfile"
    as_owner "$bindir/initdb" -D "$data" -U "$RECON_PG_USER" --pwfile="$pwfile" \
      --auth-host=scram-sha-256 --auth-local=reject -E UTF8 --locale=C.UTF-8 >"$pgdir/initdb.log" 2>&1 \
      || { rm -f "$pwfile"; die "initdb failed: see $pgdir/initdb.log"; }
    rm -f "$pwfile"
    cat >> "$data/postgresql.conf" <<EOC
listen_addresses = '127.0.0.1'
port = $RECON_PG_PORT
unix_socket_directories = ''
max_connections = 200
shared_buffers = 256MB
fsync = on
max_prepared_transactions = 20
EOC
  fi
}

start() {
  init
  if running; then say "PostgreSQL already running on $RECON_PG_HOST:$RECON_PG_PORT"; else
    port_taken "$RECON_PG_PORT" && die "port $RECON_PG_PORT is in use by another process: stop it or set RECON_PG_PORT"
    say "starting PostgreSQL on $RECON_PG_HOST:$RECON_PG_PORT (log: $log)"
    touch "$log"; chown "$RECON_PG_OS_USER" "$log"
    # setsid: the server must outlive the shell that started it and not receive its signals.
    as_owner setsid "$bindir/pg_ctl" -D "$data" -l "$log" -o "-p $RECON_PG_PORT" -w -t 60 start >/dev/null \
      || die "PostgreSQL did not start: see $log"
  fi
  for db in "$RECON_PG_SINK_DB" "$RECON_PG_AIRFLOW_DB" "$RECON_PG_RESULTS_DB"; do
    if [ -z "$(psql_admin -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" ]; then
      psql_admin -d postgres -c "CREATE DATABASE \"$db\"" || die "could not create database $db"
    fi
  done
}

stop() {
  if [ -f "$data/postmaster.pid" ]; then
    say "stopping PostgreSQL"
    as_owner "$bindir/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null 2>&1 || true
  fi
}

# A crash and recovery (mode immediate), or a clean restart (fast): for the fault tests.
restart() {
  local mode="${1:-fast}"
  say "restarting PostgreSQL (mode $mode)"
  as_owner "$bindir/pg_ctl" -D "$data" -m "$mode" -w -t 60 stop >/dev/null 2>&1 || true
  start
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  restart) restart "${2:-fast}" ;;
  status) if running; then echo "PostgreSQL running on $RECON_PG_HOST:$RECON_PG_PORT"; else echo "PostgreSQL stopped"; exit 3; fi ;;
  psql) shift; psql_admin "$@" ;;
  *) die "usage: $0 start|stop|restart [fast|immediate]|status|psql [args]" ;;
esac
