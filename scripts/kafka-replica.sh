#!/usr/bin/env bash
# A second Kafka cluster, for replicas (MirrorMaker 2 on the Connect worker copies topics of the
# project's cluster into it): one KRaft node on loopback, PLAINTEXT only, its own ports and data
# folder, from the same jars as the project's broker (.state/jars/kafka).
# usage: kafka-replica.sh start|stop|status
set -euo pipefail
. "$(dirname "$0")/env.sh"

node_name="the replica Kafka"
dir="$RECON_STATE/kafka-replica"
bootstrap="$RECON_KAFKA_REPLICA_BOOTSTRAP"
ports="$RECON_KAFKA_REPLICA_PORT $RECON_KAFKA_REPLICA_CONTROLLER_PORT"
port_vars="RECON_KAFKA_REPLICA_PORT / RECON_KAFKA_REPLICA_CONTROLLER_PORT"
heap_start=128m
heap=512m

node_listeners() {
  cat <<EOP
controller.quorum.bootstrap.servers=127.0.0.1:$RECON_KAFKA_REPLICA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$RECON_KAFKA_REPLICA_PORT,CONTROLLER://127.0.0.1:$RECON_KAFKA_REPLICA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$RECON_KAFKA_REPLICA_PORT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
EOP
}

node_ready() {
  "$RECON_VENV/bin/python" - <<EOPY
import sys
from confluent_kafka.admin import AdminClient
md = AdminClient({"bootstrap.servers": "$bootstrap"}).list_topics(timeout=2)
sys.exit(0 if md.brokers else 1)
EOPY
}

. "$(dirname "$0")/kraft.sh"
node_main "$@"
