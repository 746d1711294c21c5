#!/usr/bin/env bash
# `docker compose` for this repository, which first checks, for `up`, that every port the compose
# file publishes on the host is free, and names the variable that moves a port that is taken:
#   scripts/compose.sh up --build -d
#   PHALANX_NATS_PORT=14222 scripts/compose.sh up --build -d     # where the host already runs NATS
# Other commands (ps, logs, down -v, ...) go to `docker compose` unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."
# variable=default, as in docker-compose.yml
ports=(PHALANX_NATS_PORT=4222 PHALANX_SIMULATOR_PORT=8001 PHALANX_CONSOLE_PORT=8088)
python=${PYTHON:-python3}

is_up=false
for argument in "$@"; do
  [ "$argument" = up ] && is_up=true
done
# A stack of this project that already runs holds its own ports: nothing to check then.
if $is_up && [ -z "$(docker compose ps -q 2>/dev/null)" ]; then
  taken=0
  for entry in "${ports[@]}"; do
    variable=${entry%%=*}
    port=${!variable:-${entry#*=}}
    if ! "$python" -c 'import socket, sys
s = socket.socket()
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)' "$port"; then
      echo "Port $port on 127.0.0.1 is taken; set $variable to a free port, e.g. $variable=$((port + 10000)) $0 $*" >&2
      taken=1
    fi
  done
  [ "$taken" = 0 ] || exit 1
fi
exec docker compose "$@"
