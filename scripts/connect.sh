#!/usr/bin/env bash
# The project's Kafka Connect worker: one worker in distributed mode on the project's broker, from
# the jars in .state/jars/connect (Apache Kafka's own, the broker's version; MirrorMaker 2's
# connectors are built in). Its REST API listens on 127.0.0.1 only, without authentication: any
# local user can manage connectors, as any local user can use the broker's PLAINTEXT listener.
# Plugins are folders under RECON_CONNECT_PLUGINS (plugin.path), one per connect-plugin-<name>
# profile of jvm/pom.xml.   usage: connect.sh start|stop|status
set -euo pipefail
. "$(dirname "$0")/env.sh"

dir="$RECON_STATE/connect"
props="$dir/worker.properties"
pidfile="$dir/connect.pid"
log="$dir/connect.log"

# A killed worker whose parent never reaps it (its starter's shell is gone; the container's first
# process may not reap orphans) stays a zombie, which kill -0 still finds: that is not running.
running() {
  [ -f "$pidfile" ] || return 1
  local state
  state=$(ps -o stat= -p "$(cat "$pidfile")" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "${state#Z}" = "$state" ]
}
# Ready means the herder has joined its group and read its configs: /connectors answers 200.
answers() { curl -sf --max-time 3 -o /dev/null "$RECON_CONNECT_URL/connectors"; }

write_config() {
  mkdir -p "$dir" "$RECON_CONNECT_PLUGINS"
  cat > "$props" <<EOP
bootstrap.servers=$RECON_KAFKA_BOOTSTRAP
group.id=recon-connect
# The worker's state lives in these topics of the project's broker (one node: replication 1).
config.storage.topic=recon-connect-configs
offset.storage.topic=recon-connect-offsets
status.storage.topic=recon-connect-status
config.storage.replication.factor=1
offset.storage.replication.factor=1
status.storage.replication.factor=1
offset.storage.partitions=5
status.storage.partitions=1
# Records, keys and headers byte for byte unless a connector says otherwise: the default
# converters re-encode them (a byte header arrives base64-encoded), which changes the message ids
# the product matches across a hop.
key.converter=org.apache.kafka.connect.converters.ByteArrayConverter
value.converter=org.apache.kafka.connect.converters.ByteArrayConverter
header.converter=org.apache.kafka.connect.converters.ByteArrayConverter
listeners=http://127.0.0.1:$RECON_CONNECT_PORT
rest.advertised.host.name=127.0.0.1
rest.advertised.port=$RECON_CONNECT_PORT
plugin.path=$RECON_CONNECT_PLUGINS
# Plugins are found through their ServiceLoader manifests (Kafka's own and Debezium's have them):
# the default also scans every class by reflection, 13 of the worker's 22 s start here.
plugin.discovery=service_load
# A connector's config names the database password as \${env:RECON_PG_DEBEZIUM_PASSWORD}: the
# worker resolves it from its own environment (secrets.env), so neither the REST API nor the
# config topic holds it; no other variable can be read that way.
config.providers=env
config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider
config.providers.env.param.allowlist.pattern=^RECON_PG_DEBEZIUM_PASSWORD\$
# One worker: a restarted worker takes its tasks back at once instead of after the 5-minute
# default a cluster waits for a departed member.
scheduled.rebalance.max.delay.ms=0
offset.flush.interval.ms=10000
EOP
  write_log4j2 "$dir/log4j2.properties" "$log" org.reflections=ERROR
}

start() {
  if running; then say "Kafka Connect already running on $RECON_CONNECT_URL"; return 0; fi
  [ -d "$RECON_JARS_CONNECT" ] || die "Kafka Connect jars missing: run 'make setup' first"
  port_taken "$RECON_CONNECT_PORT" \
    && die "port $RECON_CONNECT_PORT is in use by another process: stop it or set RECON_CONNECT_PORT"
  write_config
  # One log per start, the previous one kept (as spark-connect.sh does).
  if [ -f "$log" ]; then mv -f "$log" "$log.1"; fi
  say "starting Kafka Connect on $RECON_CONNECT_URL (log: $log)"
  setsid bash -c 'exec "$@"' _ java -Xms128m -Xmx512m -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$dir/log4j2.properties" -cp "$RECON_JARS_CONNECT/*" \
    org.apache.kafka.connect.cli.ConnectDistributed "$props" >"$dir/connect.out" 2>&1 < /dev/null &
  echo $! > "$pidfile"
  for _ in $(seq 1 120); do
    if ! running; then rm -f "$pidfile"; die "Kafka Connect exited while starting: see $log and $dir/connect.out"; fi
    if answers; then say "Kafka Connect is up"; return 0; fi
    sleep 1
  done
  die "Kafka Connect did not answer within 120 s: see $log"
}

stop() { stop_pidfile "Kafka Connect" "$pidfile" 30; }

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) if running; then echo "Kafka Connect running (pid $(cat "$pidfile")) on $RECON_CONNECT_URL"; else echo "Kafka Connect stopped"; exit 3; fi ;;
  *) die "usage: $0 start|stop|status" ;;
esac
