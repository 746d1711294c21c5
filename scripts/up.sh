#!/usr/bin/env bash
# Sets up and runs the whole system on embedded defaults (no Docker, no cluster needed).
# Extra arguments go to `phalanx up` (e.g. --detach, --state-dir DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec .venv/bin/phalanx up "$@"
