#!/usr/bin/env bash
# Runs a command with the project's environment (ports, paths, connections, .venv on PATH).
set -euo pipefail
. "$(dirname "$0")/env.sh"
exec "$@"
