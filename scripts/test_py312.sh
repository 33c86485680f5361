#!/usr/bin/env bash
# The unit tier again on Python 3.12, the other version pyproject.toml supports, when the machine
# has one (RECON_PYTHON312, python3.12 on PATH, or pyenv's newest 3.12); says so and passes when
# it has none. The 3.12 environment lives in .state/venv-py312, installed once per pyproject.toml
# and constraints.txt (the same pinned set, by uv). PostgreSQL and Kafka are started for the unit
# tests that read Airflow's metadata database, and stopped at the end if this script started them.
set -euo pipefail
. "$(dirname "$0")/env.sh"
. "$(dirname "$0")/test-env.sh"
here="$(dirname "$0")"

is_312() { [ -n "$1" ] && "$1" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null; }
# The first candidate that runs as 3.12 (a pyenv shim on PATH may not, unless selected).
py=""
for candidate in "${RECON_PYTHON312:-}" "$(command -v python3.12 || true)" \
  $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.12*/bin/python 2>/dev/null | sort -rV); do
  if is_312 "$candidate"; then py="$candidate"; break; fi
done
if [ -z "$py" ]; then
  say "no Python 3.12 on this machine (set RECON_PYTHON312 to one): the 3.12 unit tier is skipped"
  exit 0
fi

venv="$RECON_STATE/venv-py312"
install_venv "$py" "$venv" "installing the Python 3.12 environment into $venv ($("$py" -V))"

RECON_VENV="$venv" bash "$here/with-env.sh" python -m recon.spark.class_archive

note_stopped_services postgres kafka kafka-replica connect
trap stop_started EXIT
bash "$here/up.sh" --no-airflow

cd "$RECON_ROOT"
say "tests: unit tier on $("$venv/bin/python" -V), two at a time"
RECON_VENV="$venv" bash "$here/with-env.sh" python -m pytest -p no:cacheprovider --durations=5 \
  -m unit -n 2 --dist loadfile "$@"
say "the unit tier passed on Python 3.12"
