#!/usr/bin/env bash
# A second Kafka cluster, for replicas (MirrorMaker 2 on the Connect worker copies topics of the
# project's cluster into it): one KRaft node on loopback, PLAINTEXT only, its own ports and data
# folder, from the same jars as the project's broker (.state/jars/kafka).
# usage: kafka-replica.sh start|stop|status
set -euo pipefail
. "$(dirname "$0")/env.sh"

dir="$RECON_STATE/kafka-replica"
props="$dir/server.properties"
pidfile="$dir/kafka.pid"
log="$dir/kafka.log"

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

write_config() {
  mkdir -p "$dir/data"
  cat > "$props" <<EOP
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$RECON_KAFKA_REPLICA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$RECON_KAFKA_REPLICA_PORT,CONTROLLER://127.0.0.1:$RECON_KAFKA_REPLICA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$RECON_KAFKA_REPLICA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
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
logger.state.name = state.change.logger
logger.state.level = WARN
EOP
}

java_cmd=(java -Xms128m -Xmx512m -XX:+UseG1GC -Djava.awt.headless=true
  "-Dlog4j2.configurationFile=$dir/log4j2.properties" -cp "$RECON_JARS_KAFKA/*")

start() {
  if running; then say "replica Kafka already running on $RECON_KAFKA_REPLICA_BOOTSTRAP"; return 0; fi
  [ -d "$RECON_JARS_KAFKA" ] || die "Kafka jars missing: run 'make setup' first"
  for p in "$RECON_KAFKA_REPLICA_PORT" "$RECON_KAFKA_REPLICA_CONTROLLER_PORT"; do
    port_taken "$p" && die "port $p is in use by another process: stop it or set RECON_KAFKA_REPLICA_PORT / RECON_KAFKA_REPLICA_CONTROLLER_PORT"
  done
  write_config
  if [ ! -f "$dir/data/meta.properties" ]; then
    say "formatting the replica Kafka's storage (KRaft)"
    cluster_id=$("${java_cmd[@]}" kafka.tools.StorageTool random-uuid 2>>"$log" | tail -1)
    "${java_cmd[@]}" kafka.tools.StorageTool format --standalone -t "$cluster_id" -c "$props" >>"$log" 2>&1 \
      || die "formatting the replica Kafka's storage failed: see $log"
  fi
  say "starting the replica Kafka on $RECON_KAFKA_REPLICA_BOOTSTRAP (log: $log)"
  setsid "${java_cmd[@]}" kafka.Kafka "$props" >>"$dir/kafka.out" 2>&1 < /dev/null &
  echo $! > "$pidfile"
  for _ in $(seq 1 120); do
    if ! running; then rm -f "$pidfile"; die "the replica Kafka exited while starting: see $log and $dir/kafka.out"; fi
    if "$RECON_VENV/bin/python" - <<EOPY 2>/dev/null
import sys
from confluent_kafka.admin import AdminClient
md = AdminClient({"bootstrap.servers": "$RECON_KAFKA_REPLICA_BOOTSTRAP"}).list_topics(timeout=2)
sys.exit(0 if md.brokers else 1)
EOPY
    then say "the replica Kafka is up"; return 0; fi
    sleep 1
  done
  die "the replica Kafka did not answer within 120 s: see $log"
}

stop() { stop_pidfile "replica Kafka" "$pidfile" 60; }

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) if running; then echo "replica Kafka running (pid $(cat "$pidfile")) on $RECON_KAFKA_REPLICA_BOOTSTRAP"; else echo "replica Kafka stopped"; exit 3; fi ;;
  *) die "usage: $0 start|stop|status" ;;
esac
