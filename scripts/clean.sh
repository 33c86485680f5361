#!/usr/bin/env bash
# Removes the project's generated leftovers that are safe to rebuild; stops nothing.
# usage: clean.sh [--dry-run] [--orphan-clusters]
#
# Refuses while this checkout's PostgreSQL, Kafka, Airflow or alert catcher runs (`make down`
# stops them). Removes, inside the checkout only:
#   - $RECON_STATE/pg when it is a link to a cluster folder that is gone (postgres.sh refuses to
#     start on it), or a folder of the layout before the cluster moved to $RECON_PG_HOME that holds
#     no cluster (an aborted initdb: no data/PG_VERSION). A folder with a cluster is kept:
#     postgres.sh moves it on its next start.
#   - tool caches and build by-products: .pytest_cache .mypy_cache .ruff_cache __pycache__ build
#     spark-warehouse metastore_db derby.log test-artifacts.
# Never: .venv, $RECON_STATE's secrets.env, jars, data (runs' snapshots and ledger), kafka (the
# topics), airflow, gx, pipelines.d (your pipelines), inbox, nor this checkout's cluster.
#
# $RECON_PG_HOME (outside the checkout) holds one cluster folder per checkout ever initialised:
# they are listed, never removed, except with --orphan-clusters, which removes those that are
# provably orphaned: stopped, and the checkout recorded in their `checkout` file (postgres.sh
# writes it) no longer links to them. A folder without that record (made before it existed) may
# be another checkout's: it is listed for you to judge.
set -euo pipefail
. "$(dirname "$0")/env.sh"
here="$(cd "$(dirname "$0")" && pwd)"

dry=0
orphans=0
for arg in "$@"; do
  case "$arg" in
    --dry-run | -n) dry=1 ;;
    --orphan-clusters) orphans=1 ;;
    *) die "usage: $0 [--dry-run] [--orphan-clusters]" ;;
  esac
done

# 1. Nothing of this checkout's stack may be running: each service's own status command.
busy=""
for svc in postgres:PostgreSQL kafka:Kafka kafka-replica:"the replica Kafka" connect:"Kafka Connect" \
    airflow:Airflow catcher:catcher; do
  if bash "$here/${svc%%:*}.sh" status >/dev/null 2>&1; then busy="$busy${busy:+, }${svc#*:}"; fi
done
[ -z "$busy" ] || die "not cleaning: running from this checkout: $busy; stop them with 'make down'"

root=$(cd "$RECON_ROOT" && pwd -P)
removed=0
remove() {  # $1: a path; never followed if a link
  local what="$1" why="$2"
  if [ "$dry" = 1 ]; then
    printf 'would remove %s (%s)\n' "$what" "$why"
  else
    printf 'removing %s (%s)\n' "$what" "$why"
    rm -rf -- "$what"
  fi
  removed=$((removed + 1))
}
# Inside the checkout: a path whose parent folder resolves under $RECON_ROOT.
inside() { case "$(cd "$(dirname "$1")" 2>/dev/null && pwd -P)/" in "$root"/*) return 0 ;; esac; return 1; }

# 2. The state folder's PostgreSQL leftovers.
link="$RECON_STATE/pg"
if [ -L "$link" ]; then
  if [ ! -d "$link/" ]; then
    remove "$link" "link to $(readlink "$link"), which is gone; postgres.sh makes a new cluster"
  fi
elif [ -d "$link" ]; then
  if [ -f "$link/data/PG_VERSION" ]; then
    say "keeping $link: a cluster of the earlier layout, moved to $RECON_PG_HOME on its next start"
  elif inside "$link"; then
    remove "$link" "no cluster in it: an aborted initdb of the earlier layout"
  fi
fi

# 3. Caches and build by-products (all in .gitignore), never inside .git, .venv or the state.
for name in .pytest_cache .mypy_cache .ruff_cache build spark-warehouse metastore_db derby.log \
  test-artifacts; do
  if [ -e "$root/$name" ] || [ -L "$root/$name" ]; then remove "$root/$name" "generated"; fi
done
state_real=$(cd "$RECON_STATE" 2>/dev/null && pwd -P || echo "$RECON_STATE")
while IFS= read -r -d '' d; do
  remove "$d" "bytecode"
done < <(find "$root" \( -path "$root/.git" -o -path "$root/.venv" -o -path "$state_real" \
  -o -path "$(cd "$RECON_VENV" 2>/dev/null && pwd -P || echo "$RECON_VENV")" \) -prune \
  -o -type d -name __pycache__ -print0 -prune)

# 4. $RECON_PG_HOME: each cluster folder, whose it is.
mine=""
[ -L "$link" ] && [ -d "$link/" ] && mine=$(readlink -f "$link")
if [ -d "$RECON_PG_HOME" ] && [ -r "$RECON_PG_HOME" ] && [ -x "$RECON_PG_HOME" ]; then
  for c in "$RECON_PG_HOME"/*/; do
    [ -d "$c" ] || continue
    c=${c%/}
    real=$(readlink -f "$c")
    [ "$real" = "$mine" ] && continue
    size=$(du -sh "$c" 2>/dev/null | cut -f1)
    state="stopped"
    [ -f "$c/data/postmaster.pid" ] && state="running or crashed (postmaster.pid)"
    [ -f "$c/data/PG_VERSION" ] || state="$state, no cluster (aborted initdb)"
    owner_link=""
    [ -f "$c/checkout" ] && owner_link=$(head -n1 "$c/checkout")
    if [ -z "$owner_link" ]; then
      say "not removed: $c ($size, $state): no record of its checkout; remove it yourself if no checkout's .state/pg links to it"
    elif [ -L "$owner_link" ] && [ "$(readlink -f "$owner_link")" = "$real" ]; then
      say "kept: $c ($size): the cluster of $owner_link"
    elif [ -f "$c/data/postmaster.pid" ]; then
      say "not removed: $c ($size, $state): orphaned from $owner_link but not stopped"
    elif [ "$orphans" = 1 ]; then
      remove "$c" "$size, orphaned: $owner_link no longer links to it"
    else
      say "orphaned: $c ($size): $owner_link no longer links to it; 'scripts/clean.sh --orphan-clusters' removes it"
    fi
  done
fi

if [ "$removed" = 0 ]; then say "nothing to remove"; fi
