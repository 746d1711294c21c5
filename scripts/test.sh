#!/usr/bin/env bash
# Sets up and runs the whole test suite: unit, integration (real NATS and PostgreSQL) and end to
# end (the full stack against the simulated cluster). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# kubectl drives a few tests the way a user would; they are skipped where there is none.
scripts/kubectl.sh || echo "the tests that use kubectl will be skipped"
# The console's browser tests drive Debian's Chromium through Playwright; nothing downloads a browser.
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1 \
    || echo "chromium could not be installed; the console's browser tests will be skipped"
fi
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
# The import contracts in pyproject.toml: layers, independent services, pure cores free of I/O.
.venv/bin/lint-imports
exec .venv/bin/pytest -q --durations=25 "$@"
