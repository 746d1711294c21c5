"""No single object stops the system (issue #28's Done-when), on `phalanx up` through kubectl.

A 1.4 MiB Pod flows through the watcher to the scheduler and runs; a Job with
`replicas: 2147483647` is accepted as Volcano accepts it and waits, bounded, with no pod made;
a Job whose task list is an object is refused naming `spec.tasks`; a Command carrying a 1.2 MiB
message (too large for the bus) is published as a reference and read from the API. A valid job
submitted right after all of them completes, and every service is still alive.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from typing import Any

import pytest
import yaml

from phalanx import stack as stacks
from tests.e2e.conftest import kubectl
from tests.waiting import eventually

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        shutil.which("kubectl") is None, reason="kubectl (Debian: kubernetes-client) not installed"
    ),
]
RUN = {"simulator.phalanx/run-seconds": "1"}


def big_pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "big-pod", "namespace": "default", "annotations": RUN},
        "spec": {
            "schedulerName": "volcano",
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "env": [{"name": "BLOB", "value": "x" * 1_400_000}],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ],
        },
    }


def job(name: str, tasks: Any, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulerName": "volcano", "queue": "default", "tasks": tasks} | spec,
    }


def task(replicas: int) -> dict[str, Any]:
    return {
        "name": "worker",
        "replicas": replicas,
        "template": {
            "metadata": {"annotations": RUN},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
                ],
            },
        },
    }


def big_command() -> dict[str, Any]:
    return {
        "apiVersion": "bus.volcano.sh/v1alpha1",
        "kind": "Command",
        "metadata": {"name": "loud-command", "namespace": "default"},
        "action": "AbortJob",
        "target": {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "no-such-job"},
        "message": "m" * 1_200_000,
    }


def create(stack: stacks.Stack, obj: dict[str, Any]) -> Any:
    # `create`, not `apply`: apply would copy the object into an annotation past Kubernetes' limit.
    return kubectl(stack, "create", "-f", "-", stdin=json.dumps(obj))


def wait_for(stack: stacks.Stack, args: list[str], wanted: str, *, within: float = 120.0) -> str:
    """kubectl's answer to `args` once it is `wanted`."""
    eventually(
        lambda: kubectl(stack, *args).stdout == wanted,
        f"`kubectl {' '.join(args)}` to say {wanted!r}",
        within=within,
        every=0.5,
    )
    return wanted


def run_valid_job(stack: stacks.Stack, name: str) -> str:
    """Submit a small gang of two and wait for it to complete; the phase it reached."""
    valid = kubectl(stack, "apply", "-f", "-", stdin=yaml.safe_dump(job(name, [task(2)], minAvailable=2)))
    assert valid.returncode == 0, valid.stderr
    return wait_for(stack, ["get", "vcjob", name, "-o", "jsonpath={.status.state.phase}"], "Completed")


@pytest.mark.timeout(300)  # generous on a loaded machine: two waits of up to two minutes each
def test_poison_objects_each_get_their_outcome_and_a_valid_job_completes(stack: stacks.Stack) -> None:
    made = create(stack, big_pod())
    assert made.returncode == 0, made.stderr[:2000]

    huge = create(stack, job("huge-gang", [task(2_147_483_647)]))
    assert huge.returncode == 0, huge.stderr[:2000]

    started = time.monotonic()
    wrong = create(stack, job("wrong-shape", {"worker": task(1)}))
    assert time.monotonic() - started < 5.0  # kubectl's own start-up included
    assert wrong.returncode != 0
    assert "spec.tasks" in wrong.stderr
    assert "must be of type array" in wrong.stderr
    assert "Internal error" not in wrong.stderr
    assert len(wrong.stderr) < 10_000

    loud = create(stack, big_command())
    assert loud.returncode == 0, loud.stderr[:2000]

    assert run_valid_job(stack, "after-poison") == "Completed"

    # The large pod flowed through the watcher to the scheduler and the kubelet.
    big_phase = ["get", "pod", "big-pod", "-o", "jsonpath={.status.phase}"]
    assert wait_for(stack, big_phase, "Succeeded") == "Succeeded"

    # The huge gang is held as Volcano holds it: its PodGroup waits for two billion members,
    # and not one pod was made.
    min_member = kubectl(stack, "get", "podgroup", "-o", "jsonpath={.items[*].spec.minMember}").stdout
    assert "2147483647" in min_member.split()
    pods = kubectl(stack, "get", "pods", "-l", "volcano.sh/job-name=huge-gang", "-o", "name").stdout
    assert pods.strip() == ""
    huge_phase = kubectl(stack, "get", "vcjob", "huge-gang", "-o", "jsonpath={.status.state.phase}").stdout
    assert huge_phase == "Pending"

    for process in stack.processes:
        os.kill(process.pid, 0)  # raises if the service died


def quantity_job(cpu: str) -> dict[str, Any]:
    hostile = task(1)
    hostile["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    return job("hostile-quantity", [hostile])


@pytest.mark.parametrize(
    ("obj", "field", "rule"),
    [
        (quantity_job("1e9999999"), "requests[cpu]", "exponent within"),
        (quantity_job("1Ei"), "requests[cpu]", "milli-units"),
        (
            job("hostile-replicas", [task(2_147_483_648)]),
            "spec.tasks[0].replicas",
            "less than or equal to 2147483647",
        ),
        (
            job("hostile-ttl", [task(1)], ttlSecondsAfterFinished=10**12),
            "spec.ttlSecondsAfterFinished",
            "2147483647",
        ),
        (job("n" * 300, [task(1)]), "metadata.name", "must be no more than 253 characters"),
        (job("hostile-queue", [task(1)], queue="a\x00b"), "spec.queue", "NUL"),
        (
            job("hostile-template", [{**task(1), "template": "busybox"}]),
            "spec.tasks[0].template",
            "type object",
        ),
    ],
)
def test_a_hostile_value_is_refused_through_kubectl_naming_field_and_rule(
    stack: stacks.Stack, obj: dict[str, Any], field: str, rule: str
) -> None:
    refused = create(stack, obj)
    assert refused.returncode != 0
    assert field in refused.stderr
    assert rule in refused.stderr
    assert "Internal error" not in refused.stderr
    assert len(refused.stderr) < 10_000


def test_a_podgroup_update_is_held_to_the_same_bounds(stack: stacks.Stack) -> None:
    podgroup = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "bounded-group", "namespace": "default"},
        "spec": {"minMember": 1},
    }
    assert create(stack, podgroup).returncode == 0
    patch = json.dumps({"spec": {"minMember": 2_147_483_648, "minResources": {"cpu": "1e9999999"}}})
    refused = kubectl(stack, "patch", "podgroup", "bounded-group", "--type", "merge", "-p", patch)
    assert refused.returncode != 0
    assert "spec.minMember" in refused.stderr
    assert "spec.minResources[cpu]" in refused.stderr
    kept = kubectl(stack, "get", "podgroup", "bounded-group", "-o", "jsonpath={.spec.minMember}")
    assert kept.stdout == "1"
    kubectl(stack, "delete", "podgroup", "bounded-group")
