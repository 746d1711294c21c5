#!/usr/bin/env bash
# Makes sure kubectl is there, for the steps after `phalanx up` and for the tests that use it the
# way a user does. As root with apt-get, installs Debian's kubernetes-client; otherwise says what
# to install. Exits 1 when there is still no kubectl.
set -euo pipefail
if command -v kubectl >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  log=$(mktemp -t phalanx-kubectl-XXXXXX.log)
  echo "Installing kubectl (Debian's kubernetes-client package, about 30 s; apt's output: $log) ..."
  if (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kubernetes-client) \
    >"$log" 2>&1 && command -v kubectl >/dev/null 2>&1; then
    echo "Installed $(command -v kubectl)."
    exit 0
  fi
  echo "kubectl could not be installed; see $log." >&2
fi
cat >&2 <<'TEXT'
kubectl is not installed, and the next steps use it. Install it, then carry on:
  Debian 13 or newer:  sudo apt-get install kubernetes-client
  anywhere else:       https://kubernetes.io/docs/tasks/tools/ (any version from 1.28 on)
TEXT
exit 1
