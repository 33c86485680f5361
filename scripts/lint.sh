#!/usr/bin/env bash
set -euo pipefail
. "$(dirname "$0")/env.sh"
cd "$RECON_ROOT"
ruff check .
ruff format --check .
mypy
