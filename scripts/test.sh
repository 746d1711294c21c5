#!/usr/bin/env bash
# Sets up and runs the whole test suite: unit, integration (real NATS and PostgreSQL) and end to
# end (the full stack against the simulated cluster). Extra arguments go to pytest.
#
# Without a test path among the arguments, each layer runs as its own pytest, in parallel with
# pytest-xdist (tests/README.md says why these worker counts): unit tests are CPU-bound (as many
# workers as cores), the end-to-end tests mostly wait on their stacks (more workers than cores,
# each with a stack of its own). With a path (`scripts/test.sh tests/unit/x.py`), one pytest runs
# what was named, serially unless the arguments say `-n`. PHALANX_TEST_WORKERS=0 runs every layer
# serially; an `-n` among the arguments overrides the layer's count.
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

for arg in "$@"; do
  if [[ $arg != -* && -e ${arg%%::*} ]]; then
    exec .venv/bin/pytest -q --durations=25 "$@"
  fi
done

cores=$(nproc 2>/dev/null || echo 2)
# Layer, its workers, and how xdist deals out its tests: files of integration and e2e tests stay
# on one worker each (module fixtures start servers and stacks; tests/conftest.py groups them and
# puts the longest first, an order xdist keeps with --no-loadscope-reorder).
layers=(
  "unit $cores load"
  "integration $cores loadscope"
  "e2e $((cores + 1)) loadscope"
)
failed=0 ran=0
for layer in "${layers[@]}"; do
  read -r name workers dist <<<"$layer"
  parallel=(-n "${PHALANX_TEST_WORKERS:-$workers}" --dist "$dist")
  [ "$dist" = loadscope ] && parallel+=(--no-loadscope-reorder)
  [ "${PHALANX_TEST_WORKERS:-}" = 0 ] && parallel=()
  echo "== $name tests ($(date -u +%T))"
  started=$SECONDS
  status=0
  .venv/bin/pytest -q --durations=25 "${parallel[@]}" "tests/$name" "$@" || status=$?
  echo "== $name tests: exit $status in $((SECONDS - started)) s"
  # 5: nothing collected (a -k or -m that matches only other layers' tests).
  [ "$status" = 0 ] || [ "$status" = 5 ] || failed=1
  [ "$status" = 5 ] || ran=1
done
[ "$ran" = 1 ] || exit 5
exit "$failed"
