#!/usr/bin/env bash
# Run the simulator's cluster-agnostic contract tests against a real Kubernetes cluster, the one
# KUBECONFIG names: the same tests CI runs against the simulator (docs/simulator.md, "Contract").
# Each test creates and deletes a namespace of its own; pods use busybox:1.36.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${KUBECONFIG:?set KUBECONFIG to the cluster to test against}"
export PHALANX_CONTRACT_CLUSTER=1
exec .venv/bin/pytest -q -p no:randomly \
  tests/integration/simulator/test_contract_deletion.py \
  tests/integration/simulator/test_contract_eviction.py \
  tests/integration/simulator/test_contract_dryrun.py \
  tests/integration/simulator/test_contract_kubectl.py \
  tests/integration/simulator/test_contract_validation.py \
  "$@"
