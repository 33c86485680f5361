# Sourced by every script: the one place that says where the project's state lives and which
# loopback ports its services use. Override any of these from the environment.
# The ports sit below Linux's ephemeral range (32768-60999): a client reconnecting to a stopped
# service can otherwise be given the service's own port as its source port, connect to itself,
# and hold the port in TIME-WAIT so that the service cannot bind it when it restarts.
# shellcheck shell=bash
RECON_ROOT="${RECON_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
export RECON_ROOT
export RECON_STATE="${RECON_STATE:-$RECON_ROOT/.state}"
export RECON_VENV="${RECON_VENV:-$RECON_ROOT/.venv}"
export RECON_DATA_DIR="${RECON_DATA_DIR:-$RECON_STATE/data}"

export RECON_KAFKA_PORT="${RECON_KAFKA_PORT:-23092}"
export RECON_KAFKA_CONTROLLER_PORT="${RECON_KAFKA_CONTROLLER_PORT:-23093}"
export RECON_KAFKA_FAULTY_PORT="${RECON_KAFKA_FAULTY_PORT:-23094}"
export RECON_KAFKA_PROXY_PORT="${RECON_KAFKA_PROXY_PORT:-23095}"
# SASL_PLAINTEXT (mechanism PLAIN) listener: user RECON_KAFKA_SASL_USER, password in secrets.env.
export RECON_KAFKA_SASL_PORT="${RECON_KAFKA_SASL_PORT:-23096}"
export RECON_KAFKA_SASL_USER="${RECON_KAFKA_SASL_USER:-recon}"
export RECON_KAFKA_BOOTSTRAP="${RECON_KAFKA_BOOTSTRAP:-127.0.0.1:$RECON_KAFKA_PORT}"
# A second Kafka cluster for replicas (scripts/kafka-replica.sh): connection id kafka_replica.
export RECON_KAFKA_REPLICA_PORT="${RECON_KAFKA_REPLICA_PORT:-23192}"
export RECON_KAFKA_REPLICA_CONTROLLER_PORT="${RECON_KAFKA_REPLICA_CONTROLLER_PORT:-23193}"
export RECON_KAFKA_REPLICA_BOOTSTRAP="${RECON_KAFKA_REPLICA_BOOTSTRAP:-127.0.0.1:$RECON_KAFKA_REPLICA_PORT}"
# The Kafka Connect worker's REST API (scripts/connect.sh), on 127.0.0.1 only.
export RECON_CONNECT_PORT="${RECON_CONNECT_PORT:-23083}"
export RECON_CONNECT_URL="http://127.0.0.1:$RECON_CONNECT_PORT"
export RECON_PG_PORT="${RECON_PG_PORT:-23432}"
export RECON_PG_HOST="${RECON_PG_HOST:-127.0.0.1}"
export RECON_PG_USER="${RECON_PG_USER:-recon}"
export RECON_PG_SINK_DB="${RECON_PG_SINK_DB:-recon_sink}"
export RECON_PG_AIRFLOW_DB="${RECON_PG_AIRFLOW_DB:-airflow}"
export RECON_PG_RESULTS_DB="${RECON_PG_RESULTS_DB:-recon}"
export RECON_PG_OS_USER="${RECON_PG_OS_USER:-recon-pg}"
# The login role Debezium's connector uses (REPLICATION, SELECT on the outbox tables it is granted;
# scripts/postgres.sh creates it, its password is RECON_PG_DEBEZIUM_PASSWORD in secrets.env).
export RECON_PG_DEBEZIUM_USER="${RECON_PG_DEBEZIUM_USER:-recon_debezium}"
# The service user's own folder (0700): the clusters live there, one per checkout
# (scripts/postgres.sh), never inside the checkout, which that user may not be able to reach.
export RECON_PG_HOME="${RECON_PG_HOME:-/var/lib/recon-pg}"
export RECON_AIRFLOW_PORT="${RECON_AIRFLOW_PORT:-23080}"
export RECON_SMTP_PORT="${RECON_SMTP_PORT:-23025}"
export RECON_WEBHOOK_PORT="${RECON_WEBHOOK_PORT:-23090}"
export RECON_INBOX="${RECON_INBOX:-$RECON_STATE/inbox}"
export RECON_SPARK_MASTER="${RECON_SPARK_MASTER:-local[*]}"
# The Spark Connect server scripts/spark-connect.sh starts, and its address (runs attach to it
# when RECON_SPARK_REMOTE is that address; up.sh, the tests and the bench read it from here).
export RECON_SPARK_CONNECT_PORT="${RECON_SPARK_CONNECT_PORT:-23150}"
export RECON_SPARK_CONNECT_URL="sc://localhost:$RECON_SPARK_CONNECT_PORT"
# The stack's `engine: spark` runs attach to that server (`make up` starts it; Airflow's Spark
# steps then run in their task's process as its clients): a 100k-message DAG run took 27 s
# instead of 77 s with a JVM per step (docs/benchmarks.md). Set it empty for a Spark of each
# run's own (spark-submit in Airflow); an explicit empty value is kept, unlike a missing one.
export RECON_SPARK_REMOTE="${RECON_SPARK_REMOTE-$RECON_SPARK_CONNECT_URL}"
# The pipeline declarations the DAGs and `recon` read: the demo's, unless you name yours.
export RECON_PIPELINES="${RECON_PIPELINES:-$RECON_ROOT/demo/pipelines.yaml}"
# More declarations, one DAG per pipeline of every *.yaml here (dags/recon_pipelines_dir.py): a
# team's own files, or a system test's, seen by the running scheduler without a restart.
export RECON_PIPELINES_DIR="${RECON_PIPELINES_DIR:-$RECON_STATE/pipelines.d}"

export RECON_JARS_KAFKA="$RECON_STATE/jars/kafka"
export RECON_JARS_SPARK="$RECON_STATE/jars/spark"
export RECON_JARS_CONNECT="$RECON_STATE/jars/connect"
# The Connect worker's plugin.path: one folder per plugin, fetched by setup.sh from the pom's
# connect-plugin-<name> profiles.
export RECON_CONNECT_PLUGINS="$RECON_STATE/connect/plugins"

# Generated once by scripts/setup.sh, never committed: the database password lives here only.
if [ -f "$RECON_STATE/secrets.env" ]; then
  # shellcheck disable=SC1091
  . "$RECON_STATE/secrets.env"
fi

export PATH="$RECON_VENV/bin:$PATH"
export AIRFLOW_HOME="${AIRFLOW_HOME:-$RECON_STATE/airflow}"

die() { printf 'error: %s\n' "$*" >&2; exit 1; }
say() { printf '==> %s\n' "$*"; }
# The services among "$@" that are not running yet, remembered so that stop_started (an EXIT trap)
# stops those and only those, in reverse order: test and bench runs leave a running stack as found.
started_services=()
note_stopped_services() {
  local svc
  for svc in "$@"; do
    if ! bash "$RECON_ROOT/scripts/$svc.sh" status >/dev/null 2>&1; then started_services+=("$svc"); fi
  done
}
stop_started() {
  local i
  for (( i=${#started_services[@]}-1; i>=0; i-- )); do
    bash "$RECON_ROOT/scripts/${started_services[$i]}.sh" stop || true
  done
}

# Installs the pinned set (constraints.txt) into venv $2 with interpreter $1, unless the venv's stamp
# says it holds this pyproject.toml and constraints.txt already. uv installs it in a fraction of
# pip's time (31 s here, against minutes), compiled to bytecode as pip does, so that no process (a
# DAG file's parse, a task) compiles what it imports first.
install_venv() {  # <python> <venv> <what to say>
  local py="$1" venv="$2" hash
  hash=$(cat "$RECON_ROOT/pyproject.toml" "$RECON_ROOT/constraints.txt" | sha256sum | cut -c1-16)
  if [ -f "$venv/.recon-stamp" ] && [ "$(cat "$venv/.recon-stamp")" = "$hash" ]; then return 0; fi
  say "$3"
  [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
  "$venv/bin/pip" install -q --upgrade pip "uv==0.13.9" \
    || die "pip could not install uv: is PyPI reachable?"
  VIRTUAL_ENV="$venv" "$venv/bin/uv" pip install -q --compile-bytecode --python "$venv/bin/python" \
    -c "$RECON_ROOT/constraints.txt" -e "$RECON_ROOT[airflow,spark,dev,bench]" \
    || die "installing the pinned Python packages on $("$py" -V 2>&1) failed (see above): is PyPI reachable?"
  # pyspark is an sdist: every fresh venv builds it again into a new revision of uv's cache
  # (1.3 GB each: 52 of them had filled 45 GB of this machine's disk). Drop the stale ones.
  "$venv/bin/uv" cache prune -q 2>/dev/null || true
  echo "$hash" > "$venv/.recon-stamp"
}

# Stops the process in pidfile $2 (named $1 in messages) and its process group (the services start
# under setsid): TERM, up to $3 seconds (default 60) to exit, then KILL.
stop_pidfile() {
  local name="$1" pidfile="$2" grace="${3:-60}" pid _
  if [ -f "$pidfile" ] && pid=$(cat "$pidfile") && kill -0 "$pid" 2>/dev/null; then
    say "stopping $name (pid $pid)"
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 "$grace"); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    if kill -0 "$pid" 2>/dev/null; then
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$pidfile"
}

# A JVM service's log4j2 configuration in file $1: everything at INFO into log file $2, and each
# further argument `logger=LEVEL` (e.g. org.reflections=ERROR) set apart.
write_log4j2() {
  local file="$1" logfile="$2" n=0 spec
  shift 2
  {
    cat <<EOP
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $logfile
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
EOP
    for spec in "$@"; do
      n=$((n + 1))
      printf 'logger.l%d.name = %s\nlogger.l%d.level = %s\n' "$n" "${spec%%=*}" "$n" "${spec#*=}"
    done
  } > "$file"
}

# Standard input into file $1, readable by this user only from the moment it exists.
write_private() { (umask 077 && cat > "$1"); }

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# A port another process listens on. Our ports lie in Linux's ephemeral range, so an outgoing
# connection may hold one for a moment: try to bind (as the servers do), for up to 10 s.
port_taken() {
  local _
  for _ in $(seq 1 20); do
    python3 -c 'import socket,sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))' "$1" 2>/dev/null && return 1
    sleep 0.5
  done
  return 0
}

# ${VAR:-{json}} would end at the JSON's first brace and append the rest when VAR is already set
# (env.sh is sourced again by child scripts): set a default only when the variable is empty.
default_conn() { if [ -z "${!1:-}" ]; then export "$1=$2"; fi; }

# The connections the project's own stack offers, in Airflow's AIRFLOW_CONN_<ID> form: Airflow,
# the CLI and the tests resolve the same ids. The password comes from secrets.env above.
default_conn AIRFLOW_CONN_KAFKA_DEFAULT "{\"conn_type\": \"kafka\", \"extra\": {\"bootstrap.servers\": \"$RECON_KAFKA_BOOTSTRAP\"}}"
default_conn AIRFLOW_CONN_KAFKA_REPLICA "{\"conn_type\": \"kafka\", \"extra\": {\"bootstrap.servers\": \"$RECON_KAFKA_REPLICA_BOOTSTRAP\"}}"
default_conn AIRFLOW_CONN_POSTGRES_SINK "{\"conn_type\": \"postgres\", \"host\": \"$RECON_PG_HOST\", \"port\": $RECON_PG_PORT, \"login\": \"$RECON_PG_USER\", \"password\": \"${RECON_PG_PASSWORD:-}\", \"schema\": \"$RECON_PG_SINK_DB\"}"
default_conn AIRFLOW_CONN_POSTGRES_RECON "{\"conn_type\": \"postgres\", \"host\": \"$RECON_PG_HOST\", \"port\": $RECON_PG_PORT, \"login\": \"$RECON_PG_USER\", \"password\": \"${RECON_PG_PASSWORD:-}\", \"schema\": \"$RECON_PG_RESULTS_DB\"}"
# Alerts go to the demo's local catcher (scripts/catcher.sh) unless you point these elsewhere.
default_conn AIRFLOW_CONN_RECON_ALERT_WEBHOOK "{\"conn_type\": \"http\", \"host\": \"127.0.0.1\", \"port\": $RECON_WEBHOOK_PORT, \"schema\": \"http\", \"extra\": {\"endpoint\": \"/recon-alerts\"}}"
default_conn AIRFLOW_CONN_SMTP_DEFAULT "{\"conn_type\": \"smtp\", \"host\": \"127.0.0.1\", \"port\": $RECON_SMTP_PORT, \"extra\": {\"from_email\": \"recon@localhost\", \"to\": [\"data-platform@localhost\"], \"disable_tls\": true, \"disable_ssl\": true}}"
default_conn AIRFLOW_CONN_SPARK_DEFAULT "{\"conn_type\": \"spark\", \"host\": \"$RECON_SPARK_MASTER\"}"

# Airflow: its home and metadata database are the project's own; dags/ and plugins/ are this repo's.
export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="postgresql+psycopg2://$RECON_PG_USER:${RECON_PG_PASSWORD:-}@$RECON_PG_HOST:$RECON_PG_PORT/$RECON_PG_AIRFLOW_DB"
export AIRFLOW__CORE__DAGS_FOLDER="$RECON_ROOT/dags"
export AIRFLOW__CORE__PLUGINS_FOLDER="$RECON_ROOT/plugins"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__EXECUTOR=LocalExecutor
# LocalExecutor forks `parallelism` workers: the default 32 is too many for 2 cores.
export AIRFLOW__CORE__PARALLELISM="${AIRFLOW__CORE__PARALLELISM:-4}"
export AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION=False
export RECON_SPARK_POOL="${RECON_SPARK_POOL:-recon_spark}"
export AIRFLOW__CORE__AUTH_MANAGER=airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager
export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS="admin:admin"
export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE="$AIRFLOW_HOME/passwords.json"
export AIRFLOW__API__HOST=127.0.0.1
export AIRFLOW__API__PORT="$RECON_AIRFLOW_PORT"
export AIRFLOW__API__BASE_URL="http://127.0.0.1:$RECON_AIRFLOW_PORT"
export AIRFLOW__API__WORKERS=1
export AIRFLOW__CORE__EXECUTION_API_SERVER_URL="http://127.0.0.1:$RECON_AIRFLOW_PORT/execution/"
export AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL=30
export AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK=False
# A task's supervisor can miss its process's exit when the last socket closes just before the
# kernel reaps it; it then sleeps on an empty selector for this interval (5 s by default) before
# it looks again, and a failed task's end (hence its downstream) waits that long.
export AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL="${AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL:-1}"
# Data Docs are served by the reconciliation page of the Airflow UI.
export RECON_DATA_DOCS_BASE_URL="${RECON_DATA_DOCS_BASE_URL:-http://127.0.0.1:$RECON_AIRFLOW_PORT/recon/docs}"
export RECON_AIRFLOW_BASE_URL="${RECON_AIRFLOW_BASE_URL:-http://127.0.0.1:$RECON_AIRFLOW_PORT}"
