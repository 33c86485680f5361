#!/usr/bin/env bash
# The project's Kafka broker: one KRaft node (broker and controller) on loopback, transactions and
# consumer groups enabled, from the jars in .state/jars/kafka. A second listener (FAULTY) is
# advertised at RECON_KAFKA_PROXY_PORT, where the workload's fault-injecting TCP proxy listens and
# forwards to it: clients bootstrapped there talk to the broker only through the proxy.   usage: kafka.sh start|stop|status
set -euo pipefail
. "$(dirname "$0")/env.sh"

node_name="Kafka"
dir="$RECON_STATE/kafka"
bootstrap="$RECON_KAFKA_BOOTSTRAP"
ports="$RECON_KAFKA_PORT $RECON_KAFKA_CONTROLLER_PORT $RECON_KAFKA_FAULTY_PORT $RECON_KAFKA_SASL_PORT"
port_vars="RECON_KAFKA_PORT / RECON_KAFKA_CONTROLLER_PORT / RECON_KAFKA_FAULTY_PORT / RECON_KAFKA_SASL_PORT"
heap_start=256m
heap=1g

node_listeners() {
  [ -n "${RECON_KAFKA_SASL_PASSWORD:-}" ] || die "no Kafka SASL password in $RECON_STATE/secrets.env: run 'make setup'"
  cat <<EOP
controller.quorum.bootstrap.servers=127.0.0.1:$RECON_KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$RECON_KAFKA_PORT,CONTROLLER://127.0.0.1:$RECON_KAFKA_CONTROLLER_PORT,FAULTY://127.0.0.1:$RECON_KAFKA_FAULTY_PORT,SASL_PLAINTEXT://127.0.0.1:$RECON_KAFKA_SASL_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$RECON_KAFKA_PORT,FAULTY://127.0.0.1:$RECON_KAFKA_PROXY_PORT,SASL_PLAINTEXT://127.0.0.1:$RECON_KAFKA_SASL_PORT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,FAULTY:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT
sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_$RECON_KAFKA_SASL_USER="$RECON_KAFKA_SASL_PASSWORD";
EOP
}

# Ready means the group coordinator answers too, not only metadata.
node_ready() {
  "$RECON_VENV/bin/python" - <<EOPY
import sys
from confluent_kafka.admin import AdminClient
a = AdminClient({"bootstrap.servers": "$bootstrap"})
md = a.list_topics(timeout=2)
if not md.brokers:
    sys.exit(1)
a.describe_consumer_groups(["recon-readiness-probe"])["recon-readiness-probe"].result(timeout=5)
EOPY
}

. "$(dirname "$0")/kraft.sh"
node_main "$@"
