"""kubectl as users script it against a cluster: explain, apply --dry-run=server, apply
--server-side. Runs unchanged against a real cluster with Volcano's CRDs (conftest.py says how);
skipped without kubectl (scripts/kubectl.sh installs it).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.simulator.conftest import NODES, REAL_CLUSTER
from tests.simulator_thread import running_simulator

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


def managers(kubeconfig: str, name: str) -> dict[tuple[str, str], Any]:
    shown = kubectl(kubeconfig, "get", "configmap", name, "-o", "json", "--show-managed-fields")
    assert shown.returncode == 0, shown.stderr
    entries = json.loads(shown.stdout)["metadata"].get("managedFields") or []
    return {(e["manager"], e["operation"]): e["fieldsV1"] for e in entries}


def test_server_side_apply_creates_and_records_the_manager(kubeconfig: str) -> None:
    """SERVER_SIDE_APPLY: the object is created and metadata.managedFields says kubectl applied
    the fields it sent."""
    applied = kubectl(kubeconfig, "apply", "--server-side", "-f", "-", stdin=configmap("ssa-new", k="v"))

    assert applied.returncode == 0, applied.stderr
    assert "serverside-applied" in applied.stdout
    assert managers(kubeconfig, "ssa-new")[("kubectl", "Apply")]["f:data"] == {"f:k": {}}


def test_a_field_another_manager_set_is_a_conflict_until_forced(kubeconfig: str) -> None:
    """SERVER_SIDE_APPLY (conflicts): applying a value another manager set fails with a conflict
    naming it; --force-conflicts takes the field over."""
    kubectl(kubeconfig, "apply", "--server-side", "-f", "-", stdin=configmap("ssa-owned", k="v"))
    patched = kubectl(
        kubeconfig,
        "patch",
        "configmap",
        "ssa-owned",
        "--type=merge",
        "-p",
        '{"data":{"k":"theirs"}}',
        "--field-manager=other",
    )
    assert patched.returncode == 0, patched.stderr

    refused = kubectl(kubeconfig, "apply", "--server-side", "-f", "-", stdin=configmap("ssa-owned", k="mine"))
    forced = kubectl(
        kubeconfig,
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        "-",
        stdin=configmap("ssa-owned", k="mine"),
    )

    assert refused.returncode != 0
    assert 'conflict with "other"' in refused.stderr
    assert forced.returncode == 0, forced.stderr
    owners = managers(kubeconfig, "ssa-owned")
    assert owners[("kubectl", "Apply")]["f:data"] == {"f:k": {}}
    assert "f:data" not in owners.get(("other", "Update"), {})


def test_a_field_left_out_of_the_next_apply_is_removed(kubeconfig: str) -> None:
    """SERVER_SIDE_APPLY (field management): a field the manager applied before and no longer
    applies, that no one else manages, is removed."""
    kubectl(kubeconfig, "apply", "--server-side", "-f", "-", stdin=configmap("ssa-drop", a="1", b="2"))

    again = kubectl(kubeconfig, "apply", "--server-side", "-f", "-", stdin=configmap("ssa-drop", a="1"))

    assert again.returncode == 0, again.stderr
    shown = kubectl(kubeconfig, "get", "configmap", "ssa-drop", "-o", "json")
    assert json.loads(shown.stdout)["data"] == {"a": "1"}


def test_a_volcano_job_applies_server_side(kubeconfig: str) -> None:
    """SERVER_SIDE_APPLY for Volcano's Job, as GitOps tools apply it."""
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "ssa-job"},
        "spec": {
            "minAvailable": 1,
            "schedulerName": "volcano",
            "tasks": [
                {
                    "name": "main",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "image": "busybox:1.36", "command": ["true"]}],
                        }
                    },
                }
            ],
        },
    }
    first = kubectl(kubeconfig, "apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(job))
    job["spec"]["minAvailable"] = 1
    job["metadata"]["labels"] = {"team": "a"}
    second = kubectl(kubeconfig, "apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(job))

    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    shown = json.loads(kubectl(kubeconfig, "get", "vcjob", "ssa-job", "-o", "json").stdout)
    assert shown["metadata"]["labels"] == {"team": "a"}
    kubectl(kubeconfig, "delete", "vcjob", "ssa-job", "--wait=false")
