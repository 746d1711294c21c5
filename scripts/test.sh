#!/usr/bin/env bash
# Sets up and runs the whole test suite: unit, integration (real NATS and PostgreSQL) and end to
# end (the full stack against the simulated cluster). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# kubectl drives a few tests the way a user would; they are skipped where there is none.
scripts/kubectl.sh || echo "the tests that use kubectl will be skipped"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
exec .venv/bin/pytest -q "$@"
