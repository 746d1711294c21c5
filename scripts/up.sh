#!/usr/bin/env bash
# Sets up and runs the whole system on embedded defaults (no Docker, no cluster needed).
# Extra arguments go to `phalanx up` (e.g. --detach, --state-dir DIR).
set -euo pipefail
caller_dir=$PWD
cd "$(dirname "$0")/.."
scripts/setup.sh --runtime
scripts/kubectl.sh || true  # `phalanx up` itself does not need kubectl; the next steps do
# `phalanx up` prints commands to paste; they must work from the folder the user is in.
PHALANX_CALLER_DIR=$caller_dir exec .venv/bin/phalanx up "$@"
