"""What a user does by hand: kubectl against `phalanx up`, and the audit stream."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from phalanx import events
from phalanx import stack as stacks
from tests.e2e.conftest import job_phase, kubectl

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        shutil.which("kubectl") is None, reason="kubectl (Debian: kubernetes-client) not installed"
    ),
]
EXAMPLE = Path(__file__).parents[2] / "examples" / "job.yaml"
INVALID = """
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: invalid-job, namespace: default}
spec:
  minAvailable: 5
  tasks:
    - name: a
      replicas: 2
      template: {spec: {containers: [{name: c, image: busybox}]}}
    - name: a
      replicas: 1
      template: {spec: {containers: [{name: c, image: busybox}]}}
"""


def test_a_volcano_job_applied_with_kubectl_runs_to_completed(stack: stacks.Stack) -> None:
    started = datetime.now(UTC) - timedelta(seconds=1)
    applied = kubectl(stack, "apply", "-f", str(EXAMPLE))
    assert applied.returncode == 0, applied.stderr
    job_phase(stack, "hello-gang", ("Completed",))
    pods = json.loads(
        kubectl(stack, "get", "pods", "-l", "volcano.sh/job-name=hello-gang", "-o", "json").stdout
    )
    assert sorted(p["metadata"]["name"] for p in pods["items"]) == [
        f"hello-gang-worker-{i}" for i in range(3)
    ]
    assert {p["status"]["phase"] for p in pods["items"]} == {"Succeeded"}

    seen: list[str] = []
    events.run(stack.nats_url, since=started, pattern=None, emit=seen.append, stop_after_idle=1.0)
    actions = " ".join(seen)
    for action in (
        "admission.admitted",
        "scheduler.enqueued",
        "scheduler.placed",
        "controller.bound",
        "controller.phase-changed",
    ):
        assert action in actions, f"{action} missing from the audit stream:\n" + "\n".join(seen)


def test_an_invalid_job_is_refused_with_volcanos_message(stack: stacks.Stack) -> None:
    refused = kubectl(stack, "apply", "-f", "-", stdin=INVALID)
    assert refused.returncode != 0
    assert "duplicated task name a" in refused.stderr
    assert "job 'minAvailable' should not be greater than total replicas in tasks" in refused.stderr
    assert kubectl(stack, "get", "vcjob", "invalid-job").returncode != 0, "nothing refused is stored"


def test_server_side_apply_dry_run_and_explain_work_against_the_stack(stack: stacks.Stack) -> None:
    """What GitOps tools and users script: `kubectl apply --dry-run=server` stores nothing,
    `kubectl apply --server-side` creates the Job through admission and it runs, and `kubectl
    explain` reads Volcano's schema from the server."""
    manifest = EXAMPLE.read_text().replace("name: hello-gang", "name: applied-gang")

    dry = kubectl(stack, "apply", "--dry-run=server", "-f", "-", stdin=manifest)
    assert dry.returncode == 0, dry.stderr
    assert kubectl(stack, "get", "vcjob", "applied-gang").returncode != 0
    applied = kubectl(stack, "apply", "--server-side", "-f", "-", stdin=manifest)
    assert applied.returncode == 0, applied.stderr
    explained = kubectl(stack, "explain", "vcjob.spec.tasks")
    assert explained.returncode == 0, explained.stderr
    assert "FIELD: tasks <[]Object>" in explained.stdout

    job_phase(stack, "applied-gang", ("Running", "Completed"))
    shown = json.loads(
        kubectl(stack, "get", "vcjob", "applied-gang", "-o", "json", "--show-managed-fields").stdout
    )
    assert ("kubectl", "Apply") in {
        (e["manager"], e["operation"]) for e in shown["metadata"]["managedFields"]
    }
