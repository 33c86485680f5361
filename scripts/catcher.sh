#!/usr/bin/env bash
# The demo's mail and webhook catcher (loopback only): what the alerts send lands in .state/inbox.
# usage: catcher.sh start|stop|status
set -euo pipefail
. "$(dirname "$0")/env.sh"
dir="$RECON_STATE/catcher"
pidfile="$dir/catcher.pid"
running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }
case "${1:-}" in
  start)
    if running; then exit 0; fi
    for p in "$RECON_SMTP_PORT" "$RECON_WEBHOOK_PORT"; do
      port_taken "$p" && die "port $p is in use by another process: stop it or set RECON_SMTP_PORT / RECON_WEBHOOK_PORT"
    done
    mkdir -p "$dir" "$RECON_INBOX"
    setsid python -m recon_workload.catcher --smtp-port "$RECON_SMTP_PORT" \
      --http-port "$RECON_WEBHOOK_PORT" --inbox "$RECON_INBOX" >"$dir/catcher.log" 2>&1 < /dev/null &
    echo $! > "$pidfile"
    for _ in $(seq 1 30); do port_open "$RECON_WEBHOOK_PORT" && port_open "$RECON_SMTP_PORT" && break; sleep 0.5; done
    say "mail and webhook catcher: SMTP 127.0.0.1:$RECON_SMTP_PORT, webhook 127.0.0.1:$RECON_WEBHOOK_PORT, inbox $RECON_INBOX"
    ;;
  stop)
    if running; then kill -TERM "$(cat "$pidfile")" 2>/dev/null || true; sleep 1; fi
    rm -f "$pidfile" ;;
  status) if running; then echo "catcher running"; else echo "catcher stopped"; exit 3; fi ;;
  *) die "usage: $0 start|stop|status" ;;
esac
