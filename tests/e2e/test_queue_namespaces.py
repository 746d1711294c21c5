"""A Queue that names its namespaces refuses the others, as a kubectl user meets it on `phalanx up`.

The allowed namespaces live in the Queue's `phalanx.io/allowed-namespaces` annotation (Volcano's
CRD has no such field); admission refuses a Job or PodGroup from any other namespace with a
message naming the queue, and accepts them from the allowed ones. Queues without it stay open.
"""

from __future__ import annotations

import shutil

import pytest
import yaml

from phalanx import stack as stacks
from shared.volcano.keys import ALLOWED_NAMESPACES
from tests.e2e.conftest import job_phase, kubectl
from tests.waiting import eventually

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed"),
]

QUEUE = "team-a-only"


def job(name: str, namespace: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "batch.volcano.sh/v1alpha1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "queue": QUEUE,
                "minAvailable": 1,
                "tasks": [
                    {
                        "name": "worker",
                        "replicas": 1,
                        "template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}},
                    }
                ],
            },
        }
    )


def podgroup(name: str, namespace: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"queue": QUEUE, "minMember": 1},
        }
    )


@pytest.fixture(scope="module")
def guarded_queue(stack: stacks.Stack) -> str:
    for namespace in ("team-a", "other"):
        kubectl(stack, "create", "namespace", namespace)  # "already exists" on a rerun is fine
    manifest = yaml.safe_dump(
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": QUEUE, "annotations": {ALLOWED_NAMESPACES: "team-a"}},
            "spec": {"weight": 1},
        }
    )
    applied = kubectl(stack, "apply", "-f", "-", stdin=manifest)
    assert applied.returncode == 0, applied.stderr
    eventually(  # the controller opens the new queue
        lambda: kubectl(stack, "get", "queue", QUEUE, "-o", "jsonpath={.status.state}").stdout == "Open",
        f"queue {QUEUE} open",
        within=30,
    )
    return QUEUE


def test_a_job_from_another_namespace_is_refused_naming_the_queue(
    stack: stacks.Stack, guarded_queue: str
) -> None:
    refused = kubectl(stack, "apply", "-f", "-", stdin=job("intruder", "other"))
    assert refused.returncode != 0
    assert f"namespace `other` may not submit to queue `{guarded_queue}`" in refused.stderr
    assert ALLOWED_NAMESPACES in refused.stderr
    assert kubectl(stack, "get", "vcjob", "intruder", "-n", "other").returncode != 0


def test_a_podgroup_from_another_namespace_is_refused(stack: stacks.Stack, guarded_queue: str) -> None:
    refused = kubectl(stack, "apply", "-f", "-", stdin=podgroup("intruder-pg", "other"))
    assert refused.returncode != 0
    assert f"may not submit to queue `{guarded_queue}`" in refused.stderr


def test_the_allowed_namespace_submits_and_runs(stack: stacks.Stack, guarded_queue: str) -> None:
    applied = kubectl(stack, "apply", "-f", "-", stdin=job("welcome", "team-a"))
    assert applied.returncode == 0, applied.stderr
    job_phase(stack, "welcome", ("Running", "Completed"), namespace="team-a")
