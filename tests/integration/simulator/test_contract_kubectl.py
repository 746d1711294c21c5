"""kubectl as users script it against a cluster: explain, apply --dry-run=server, apply
--server-side. Runs unchanged against a real cluster with Volcano's CRDs (conftest.py says how);
skipped without kubectl (scripts/kubectl.sh installs it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from services.simulator.testing import running_simulator
from tests.integration.simulator.conftest import NODES, REAL_CLUSTER

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        shutil.which("kubectl") is None, reason="kubectl is not installed (scripts/kubectl.sh)"
    ),
]

EXPLAIN = "https://kubernetes.io/docs/reference/kubectl/generated/kubectl_explain/"
SERVER_SIDE_APPLY = "https://kubernetes.io/docs/reference/using-api/server-side-apply/"
DRY_RUN = "https://kubernetes.io/docs/reference/using-api/api-concepts/#dry-run"


@pytest.fixture(scope="module")
def kubeconfig() -> Iterator[str]:
    if REAL_CLUSTER:
        yield os.environ["KUBECONFIG"]
        return
    with running_simulator(nodes=NODES) as sim:
        yield str(sim.kubeconfig_path)


def kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["kubectl", "--kubeconfig", kubeconfig, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_explain_reads_volcano_and_builtin_schemas(kubeconfig: str) -> None:
    """EXPLAIN: the field's kind, type and the fields beneath it, from the server's OpenAPI v3."""
    tasks = kubectl(kubeconfig, "explain", "vcjob.spec.tasks")
    containers = kubectl(kubeconfig, "explain", "pods.spec.containers.resources")

    assert tasks.returncode == 0, tasks.stderr
    assert "KIND:       Job" in tasks.stdout
    assert "FIELD: tasks <[]Object>" in tasks.stdout
    assert "replicas\t<integer>" in tasks.stdout
    assert "template\t<PodTemplateSpec>" in tasks.stdout
    assert containers.returncode == 0, containers.stderr
    assert "FIELD: resources <ResourceRequirements>" in containers.stdout
    assert "requests\t<map[string]" in containers.stdout


def configmap(name: str, **data: str) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})


def test_apply_dry_run_server_changes_nothing(kubeconfig: str, tmp_path: Path) -> None:
    """DRY_RUN: `kubectl apply --dry-run=server` reports what would happen and leaves the cluster."""
    applied = kubectl(kubeconfig, "apply", "--dry-run=server", "-f", "-", stdin=configmap("dry", k="v"))

    assert applied.returncode == 0, applied.stderr
    assert "configmap/dry created (server dry run)" in applied.stdout
    assert kubectl(kubeconfig, "get", "configmap", "dry").returncode != 0
