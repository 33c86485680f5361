#!/usr/bin/env bash
# The project's PostgreSQL: a cluster owned by a non-root OS user, TCP on loopback only, password
# authentication; databases for the sink, the product's results and Airflow.
# usage: postgres.sh init|start|stop|restart|status|psql
#
# The cluster lives in the service user's own folder ($RECON_PG_HOME, 0700), one per checkout;
# $RECON_STATE/pg is a link to it. The checkout may sit under a private directory (/root, a 0700
# temporary folder): the service user never needs to reach into it, so no directory above the
# checkout has its permissions widened.
set -euo pipefail
. "$(dirname "$0")/env.sh"

bindir=$(dirname "$(ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1)")
link="$RECON_STATE/pg"
# The cluster's own path, not through the link: its owner may not be able to reach the checkout.
locate() {
  pgdir="$link"
  [ -L "$link" ] && pgdir=$(readlink -f "$link")
  data="$pgdir/data"
  log="$pgdir/postgres.log"
}
locate

as_owner() { runuser -u "$RECON_PG_OS_USER" -- "$@"; }
running() { [ -f "$data/postmaster.pid" ] && as_owner "$bindir/pg_ctl" -D "$data" status >/dev/null 2>&1; }

# The link that owns a cluster folder, in its `checkout` file: scripts/clean.sh tells an orphaned
# folder (its checkout deleted, or relinked) from another checkout's by it.
record_checkout() { printf '%s\n' "$(cd "$(dirname "$link")" && pwd -P)/pg" > "$1/checkout"; }

# $RECON_STATE/pg -> a folder of this checkout's cluster in $RECON_PG_HOME. A cluster made by an
# older version inside .state/pg itself moves there once, while it is stopped.
ensure_cluster_dir() {
  install -d -o "$RECON_PG_OS_USER" -m 700 "$RECON_PG_HOME"
  if [ -L "$link" ]; then
    [ -d "$link/" ] || die "$link points to $(readlink "$link"), which is gone: remove the link to start a new cluster (scripts/clean.sh)"
    [ -f "$pgdir/checkout" ] || record_checkout "$pgdir"
    return
  fi
  local home
  if [ -d "$link" ]; then
    if running; then return; fi  # moved on its next stop and start
    home="$RECON_PG_HOME/cluster-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
    say "moving the PostgreSQL cluster from $link to $home (once)"
    mv "$link" "$home"  # a rename on one file system; a copy, then a delete, across two
    chown "$RECON_PG_OS_USER" "$home"
    chmod 700 "$home"
  else
    home=$(runuser -u "$RECON_PG_OS_USER" -- mktemp -d "$RECON_PG_HOME/cluster-XXXXXX")
  fi
  mkdir -p "$RECON_STATE"
  ln -s "$home" "$link"
  record_checkout "$home"
  locate
}

psql_admin() {
  PGPASSWORD="$RECON_PG_PASSWORD" "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -h "$RECON_PG_HOST" \
    -p "$RECON_PG_PORT" -U "$RECON_PG_USER" "$@"
}

init() {
  [ -n "${RECON_PG_PASSWORD:-}" ] || die "no database password: run 'make setup' first"
  ensure_cluster_dir
  if [ ! -f "$data/PG_VERSION" ]; then
    say "creating the PostgreSQL cluster in $data"
    # In the cluster's folder: only its owner (and root) can read it, and it is gone in a moment.
    pwfile=$(runuser -u "$RECON_PG_OS_USER" -- mktemp "$pgdir/pw-XXXXXX")
    printf '%s\n' "$RECON_PG_PASSWORD" > "$pwfile"
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
    # wal_level=logical: Debezium's PostgreSQL connector (on the Connect worker) decodes the WAL.
    # Given at each start, so a cluster made before it was needed gets it too.
    as_owner setsid "$bindir/pg_ctl" -D "$data" -l "$log" \
      -o "-p $RECON_PG_PORT -c wal_level=logical -c max_wal_senders=10 -c max_replication_slots=10" \
      -w -t 60 start >/dev/null \
      || die "PostgreSQL did not start: see $log"
  fi
  for db in "$RECON_PG_SINK_DB" "$RECON_PG_AIRFLOW_DB" "$RECON_PG_RESULTS_DB"; do
    if [ -z "$(psql_admin -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" ]; then
      psql_admin -d postgres -c "CREATE DATABASE \"$db\"" || die "could not create database $db"
    fi
  done
  debezium_role
}

# Debezium's own login role: REPLICATION (it streams the WAL through a slot) and CONNECT on the
# sink database, nothing else; whoever sets a connector up grants it SELECT on the outbox tables
# and names them in a publication it creates itself (publication.autocreate.mode=disabled), so
# the role owns no table and creates nothing. Created, or its password set again, at each start:
# the password lives in secrets.env only and reaches psql on standard input, not its arguments.
debezium_role() {
  [ -n "${RECON_PG_DEBEZIUM_PASSWORD:-}" ] || die "no password for $RECON_PG_DEBEZIUM_USER: run 'make setup' first"
  psql_admin -d postgres -v role="$RECON_PG_DEBEZIUM_USER" -v db="$RECON_PG_SINK_DB" <<EOSQL >/dev/null \
    || die "could not create the role $RECON_PG_DEBEZIUM_USER"
\\set pw '$RECON_PG_DEBEZIUM_PASSWORD'
SELECT format('CREATE ROLE %I', :'role')
 WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'role') \\gexec
SELECT format('ALTER ROLE %I LOGIN REPLICATION NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD %L',
              :'role', :'pw') \\gexec
SELECT format('GRANT CONNECT ON DATABASE %I TO %I', :'db', :'role') \\gexec
EOSQL
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
  init) init ;;
  start) start ;;
  stop) stop ;;
  restart) restart "${2:-fast}" ;;
  status) if running; then echo "PostgreSQL running on $RECON_PG_HOST:$RECON_PG_PORT"; else echo "PostgreSQL stopped"; exit 3; fi ;;
  psql) shift; psql_admin "$@" ;;
  *) die "usage: $0 init|start|stop|restart [fast|immediate]|status|psql [args]" ;;
esac
