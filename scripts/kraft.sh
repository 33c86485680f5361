# One KRaft node (broker and controller) on loopback, from the jars in .state/jars/kafka: what the
# project's broker (kafka.sh) and the replica cluster (kafka-replica.sh) share. Sourced, after
# env.sh, by a script that sets:
#   node_name   how messages name the node ("Kafka", "the replica Kafka")
#   dir         its folder under .state (data/, server.properties, log4j2.properties, kafka.pid)
#   bootstrap   its PLAINTEXT address (host:port)
#   ports       every port it listens on, and port_vars, the variables that set them
#   heap_start, heap   its -Xms and -Xmx
# and defines node_listeners (the listener lines of server.properties) and node_ready (0 once the
# node serves what its users need).

props="$dir/server.properties"
pidfile="$dir/kafka.pid"
log="$dir/kafka.log"

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

write_config() {
  mkdir -p "$dir/data"
  # The listener lines may hold a password: the file is readable by this user only.
  : > "$props"; chmod 600 "$props"
  { node_listeners; cat <<EOP
process.roles=broker,controller
node.id=1
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
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
  } >> "$props"
  write_log4j2 "$dir/log4j2.properties" "$log" kafka=INFO state.change.logger=WARN
}

java_cmd=(java "-Xms$heap_start" "-Xmx$heap" -XX:+UseG1GC -Djava.awt.headless=true
  "-Dlog4j2.configurationFile=$dir/log4j2.properties" -cp "$RECON_JARS_KAFKA/*")

start() {
  if running; then say "$node_name already running on $bootstrap"; return 0; fi
  [ -d "$RECON_JARS_KAFKA" ] || die "Kafka jars missing: run 'make setup' first"
  local p
  for p in $ports; do
    port_taken "$p" && die "port $p is in use by another process: stop it or set $port_vars"
  done
  write_config
  if [ ! -f "$dir/data/meta.properties" ]; then
    say "formatting the storage of $node_name (KRaft)"
    local cluster_id
    cluster_id=$("${java_cmd[@]}" kafka.tools.StorageTool random-uuid 2>>"$log" | tail -1)
    "${java_cmd[@]}" kafka.tools.StorageTool format --standalone -t "$cluster_id" -c "$props" >>"$log" 2>&1 \
      || die "formatting the storage of $node_name failed: see $log"
  fi
  local attempt
  for attempt in 1 2 3; do
    launch && return 0
    # An outgoing connection that took one of our (ephemeral-range) ports for a moment makes the
    # acceptor fail: that passes; anything else is a real failure.
    tail -n 200 "$log" | grep -q "Unable to start acceptor" \
      || die "$node_name exited while starting: see $log and $dir/kafka.out"
    say "a port of $node_name was briefly taken (attempt $attempt): starting again"
    sleep 3
  done
  die "$node_name could not bind its ports: see $log"
}

# Starts the node and waits until it serves; returns 1 if it exited meanwhile.
launch() {
  say "starting $node_name on $bootstrap (log: $log)"
  setsid "${java_cmd[@]}" kafka.Kafka "$props" >>"$dir/kafka.out" 2>&1 < /dev/null &
  echo $! > "$pidfile"
  for _ in $(seq 1 120); do
    if ! running; then rm -f "$pidfile"; return 1; fi
    if node_ready 2>/dev/null; then say "$node_name is up"; return 0; fi
    sleep 1
  done
  die "$node_name did not answer within 120 s: see $log"
}

stop() { stop_pidfile "$node_name" "$pidfile" 60; }

node_main() {
  case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) if running; then echo "$node_name running (pid $(cat "$pidfile")) on $bootstrap"; else echo "$node_name stopped"; exit 3; fi ;;
    *) die "usage: $0 start|stop|status" ;;
  esac
}
