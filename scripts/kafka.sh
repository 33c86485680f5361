#!/usr/bin/env bash
# The project's Kafka broker: one KRaft node (broker and controller) on loopback, transactions and
# consumer groups enabled, from the jars in .state/jars/kafka. A second listener (FAULTY) is
# advertised at RECON_KAFKA_PROXY_PORT, where the workload's fault-injecting TCP proxy listens and
# forwards to it: clients bootstrapped there talk to the broker only through the proxy.   usage: kafka.sh start|stop|status
set -euo pipefail
. "$(dirname "$0")/env.sh"

dir="$RECON_STATE/kafka"
props="$dir/server.properties"
pidfile="$dir/kafka.pid"
log="$dir/kafka.log"

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

write_config() {
  mkdir -p "$dir/data"
  [ -n "${RECON_KAFKA_SASL_PASSWORD:-}" ] || die "no Kafka SASL password in $RECON_STATE/secrets.env: run 'make setup'"
  # The SASL listener's password is in this file: readable by this user only.
  : > "$props"; chmod 600 "$props"
  cat > "$props" <<EOP
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$RECON_KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$RECON_KAFKA_PORT,CONTROLLER://127.0.0.1:$RECON_KAFKA_CONTROLLER_PORT,FAULTY://127.0.0.1:$RECON_KAFKA_FAULTY_PORT,SASL_PLAINTEXT://127.0.0.1:$RECON_KAFKA_SASL_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$RECON_KAFKA_PORT,FAULTY://127.0.0.1:$RECON_KAFKA_PROXY_PORT,SASL_PLAINTEXT://127.0.0.1:$RECON_KAFKA_SASL_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,FAULTY:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT
sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$RECON_KAFKA_SASL_USER="$RECON_KAFKA_SASL_PASSWORD";
log.dirs=$dir/data
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=false
log.retention.hours=-1
EOP
  cat > "$dir/log4j2.properties" <<EOP
status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = $log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
EOP
}

java_run() {
  java -Xms256m -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$dir/log4j2.properties" \
    -cp "$RECON_JARS_KAFKA/*" "$@"
}

start() {
  if running; then say "Kafka already running on $RECON_KAFKA_BOOTSTRAP"; return 0; fi
  [ -d "$RECON_JARS_KAFKA" ] || die "Kafka jars missing: run 'make setup' first"
  for p in "$RECON_KAFKA_PORT" "$RECON_KAFKA_CONTROLLER_PORT" "$RECON_KAFKA_FAULTY_PORT" "$RECON_KAFKA_SASL_PORT"; do
    port_taken "$p" && die "port $p is in use by another process: stop it or set RECON_KAFKA_PORT / RECON_KAFKA_CONTROLLER_PORT / RECON_KAFKA_FAULTY_PORT / RECON_KAFKA_SASL_PORT"
  done
  write_config
  if [ ! -f "$dir/data/meta.properties" ]; then
    say "formatting Kafka storage (KRaft)"
    cluster_id=$(java_run kafka.tools.StorageTool random-uuid 2>>"$log" | tail -1)
    java_run kafka.tools.StorageTool format --standalone -t "$cluster_id" -c "$props" >>"$log" 2>&1 \
      || die "formatting Kafka storage failed: see $log"
  fi
  local attempt
  for attempt in 1 2 3; do
    launch && return 0
    # An outgoing connection that took one of our (ephemeral-range) ports for a moment makes the
    # acceptor fail: that passes; anything else is a real failure.
    tail -n 200 "$log" | grep -q "Unable to start acceptor" \
      || die "Kafka exited while starting: see $log and $dir/kafka.out"
    say "a Kafka port was briefly taken (attempt $attempt): starting again"
    sleep 3
  done
  die "Kafka could not bind its ports: see $log"
}

# Starts the broker and waits until it serves; returns 1 if it exited meanwhile.
launch() {
  say "starting Kafka on $RECON_KAFKA_BOOTSTRAP (log: $log)"
  setsid bash -c 'exec "$@"' _ java -Xms256m -Xmx1g -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$dir/log4j2.properties" -cp "$RECON_JARS_KAFKA/*" \
    kafka.Kafka "$props" >>"$dir/kafka.out" 2>&1 < /dev/null &
  echo $! > "$pidfile"
  for _ in $(seq 1 120); do
    if ! running; then rm -f "$pidfile"; return 1; fi
    if "$RECON_VENV/bin/python" - <<EOPY 2>/dev/null
import sys
from confluent_kafka.admin import AdminClient
a = AdminClient({"bootstrap.servers": "$RECON_KAFKA_BOOTSTRAP"})
md = a.list_topics(timeout=2)
if not md.brokers:
    sys.exit(1)
# Ready means the group coordinator answers too, not only metadata.
a.describe_consumer_groups(["recon-readiness-probe"])["recon-readiness-probe"].result(timeout=5)
EOPY
    then say "Kafka is up"; return 0; fi
    sleep 1
  done
  die "Kafka did not answer within 120 s: see $log"
}

stop() { stop_pidfile Kafka "$pidfile" 60; }

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) if running; then echo "Kafka running (pid $(cat "$pidfile")) on $RECON_KAFKA_BOOTSTRAP"; else echo "Kafka stopped"; exit 3; fi ;;
  *) die "usage: $0 start|stop|status" ;;
esac
