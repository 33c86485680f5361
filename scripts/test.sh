#!/usr/bin/env bash
# The whole suite: lint, then the unit, integration and system tiers against the real services.
# Starts what is not running and stops, at the end, only what it started.
set -euo pipefail
. "$(dirname "$0")/env.sh"
here="$(dirname "$0")"

started=()
for svc in postgres kafka airflow; do
  if ! bash "$here/$svc.sh" status >/dev/null 2>&1; then started+=("$svc"); fi
done
cleanup() {
  local i
  for (( i=${#started[@]}-1; i>=0; i-- )); do bash "$here/${started[$i]}.sh" stop || true; done
}
trap cleanup EXIT

say "lint: ruff check, ruff format --check, mypy"
bash "$here/lint.sh"

say "starting the services the tests need"
bash "$here/up.sh"

mkdir -p "$RECON_ROOT/test-artifacts"
cd "$RECON_ROOT"
for tier in unit integration system; do
  say "tests: $tier tier"
  status=0
  python -m pytest -m "$tier" -p no:cacheprovider "$@" || status=$?
  # 5 = no tests collected in this tier: fine while a tier is still empty.
  if [ "$status" != 0 ] && [ "$status" != 5 ]; then exit "$status"; fi
done
say "all tests passed"
