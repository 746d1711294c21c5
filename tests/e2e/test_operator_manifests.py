"""The seeds' KubeRay and PyTorchJob experiments from the users' own manifests, applied with kubectl
on `phalanx up`: the simulator's stand-in KubeRay and training operators create the PodGroups and
pods the real ones would, and Phalanx must give the outcomes the seed documents report for Volcano.
The same for a Deployment's pods and their group-min-member."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from phalanx import stack as stacks
from phalanx.scenario import ExternalStack
from phalanx.scenario.model import ClusterSpec
from phalanx.scenario.stack import simulator_url_of
from tests.e2e.conftest import kubectl
from tests.waiting import eventually

pytestmark = pytest.mark.e2e

MANIFESTS = Path(__file__).parent / "manifests"
TWO_NODES = [{"namePrefix": "node-", "count": 2, "cpu": "8", "memory": "16Gi"}]


def _fresh(stack: stacks.Stack, **cluster: Any) -> None:
    ExternalStack(Path(stack.state_dir)).reset(
        ClusterSpec.model_validate({"nodes": TWO_NODES, **cluster}), None
    )


def _apply(stack: stacks.Stack, *names: str) -> None:
    for name in names:
        done = kubectl(stack, "apply", "-f", str(MANIFESTS / name))
        assert done.returncode == 0, done.stderr


def _get(stack: stacks.Stack, *args: str) -> Any:
    done = kubectl(stack, "get", *args, "-o", "json")
    return json.loads(done.stdout) if done.returncode == 0 else None


def _pods(stack: stacks.Stack, namespace: str, selector: str) -> list[dict[str, Any]]:
    listed = _get(stack, "pods", "-n", namespace, "-l", selector)
    return list((listed or {}).get("items") or [])


def _phases(stack: stacks.Stack, namespace: str, selector: str) -> list[str]:
    return sorted(p["status"].get("phase", "") for p in _pods(stack, namespace, selector))


def _podgroup(stack: stacks.Stack, namespace: str, name: str) -> dict[str, Any]:
    return _get(stack, "podgroup", name, "-n", namespace) or {}


def _eventually(check: Callable[[], Any], what: str, within: float = 60.0) -> Any:
    return eventually(check, what, within=within, every=0.25)


def _stays(check: Callable[[], bool], what: str, seconds: float = 3.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert check(), f"stopped holding: {what}"
        time.sleep(0.25)


def _succeed_all(stack: stacks.Stack, namespace: str, selector: str) -> None:
    url = simulator_url_of(Path(stack.kubeconfig))
    # Workers first, as training ends: the master's success is what completes a PyTorchJob.
    pods = sorted(_pods(stack, namespace, selector), key=lambda p: "master" in p["metadata"]["name"])
    for pod in pods:
        name = pod["metadata"]["name"]
        answer = httpx.post(f"{url}/simulator/v1/namespaces/{namespace}/pods/{name}/succeed", timeout=10)
        assert answer.status_code == 200, answer.text


def _running(stack: stacks.Stack, namespace: str, selector: str, count: int) -> bool:
    return _phases(stack, namespace, selector) == ["Running"] * count


def _none_running(stack: stacks.Stack, selector: str) -> bool:
    return "Running" not in _phases(stack, "default", selector)


def _job_condition(stack: stacks.Stack, name: str) -> str:
    job = _get(stack, "pytorchjob", name, "-n", "default") or {}
    true = [c["type"] for c in (job.get("status") or {}).get("conditions") or [] if c.get("status") == "True"]
    return true[-1] if true else ""


def test_kuberay_example_two_rayclusters_against_a_small_queue(stack: stacks.Stack) -> None:
    _fresh(stack, namespaces=["test"])
    _apply(stack, "kuberay-queue.yaml", "kuberay-cluster-0.yaml")
    first = "ray.io/cluster=test-cluster-0"
    _eventually(lambda: _running(stack, "test", first, 3), "the first RayCluster's 3 pods run")
    group = _eventually(
        lambda: (
            (pg := _podgroup(stack, "test", "ray-test-cluster-0-pg")).get("status", {}).get("phase")
            == "Running"
            and pg
        ),
        "the first RayCluster's PodGroup is Running",
    )
    assert group["spec"]["minMember"] == 3
    assert group["spec"]["minResources"] == {"cpu": "3", "memory": "4Gi"}
    assert group["spec"]["queue"] == "kuberay-test-queue"

    _apply(stack, "kuberay-cluster-1.yaml")
    second = "ray.io/cluster=test-cluster-1"
    _eventually(lambda: _phases(stack, "test", second) == ["Pending"] * 3, "the second cluster's pods exist")

    def second_held() -> bool:
        pg = _podgroup(stack, "test", "ray-test-cluster-1-pg")
        return (
            pg.get("status", {}).get("phase") == "Pending"
            and _phases(stack, "test", second) == ["Pending"] * 3
        )

    _stays(second_held, "the second RayCluster stays wholly Pending (one pod would fit, the gang does not)")
    conditions = _podgroup(stack, "test", "ray-test-cluster-1-pg")["status"].get("conditions") or []
    assert any("3/3 tasks in gang unschedulable" in (c.get("message") or "") for c in conditions), conditions

    done = kubectl(stack, "delete", "raycluster", "test-cluster-0", "-n", "test")
    assert done.returncode == 0, done.stderr
    _eventually(
        lambda: _running(stack, "test", second, 3), "the second RayCluster runs once the first is gone"
    )
    cluster = _eventually(
        lambda: (
            (rc := _get(stack, "raycluster", "test-cluster-1", "-n", "test") or {})
            .get("status", {})
            .get("state")
            == "ready"
            and rc
        ),
        "the RayCluster reports ready",
    )
    assert cluster["status"]["readyWorkerReplicas"] == 2


PYTORCH_PRIORITY = {
    "namespaces": [],
    "queues": [{"name": "test", "weight": 1, "capability": {"cpu": "16", "memory": "8Gi"}}],
    "priorityClasses": [{"name": "high-priority", "value": 1000}],
}


def test_pytorchjob_priority_experiment(stack: stacks.Stack) -> None:
    _fresh(stack, **PYTORCH_PRIORITY)
    job = "training.kubeflow.org/job-name="
    _apply(stack, "pytorch-priority-job-a.yaml")
    _eventually(lambda: _running(stack, "default", job + "job-a", 6), "job-a's 6 pods run")
    _eventually(lambda: _job_condition(stack, "job-a") == "Running", "job-a reports Running")
    _apply(stack, "pytorch-priority-job-b.yaml")
    time.sleep(1)
    _apply(stack, "pytorch-priority-job-c.yaml")
    _stays(
        lambda: _none_running(stack, job + "job-b") and _none_running(stack, job + "job-c"),
        "job-b and job-c wait while job-a holds the queue",
    )
    _succeed_all(stack, "default", job + "job-a")
    _eventually(lambda: _job_condition(stack, "job-a") == "Succeeded", "job-a succeeds")
    _eventually(lambda: _running(stack, "default", job + "job-c", 6), "the high-priority job-c starts first")
    _stays(lambda: _none_running(stack, job + "job-b"), "job-b still waits", seconds=2)
    print("job-b's PodGroup while job-c runs:", _podgroup(stack, "default", "job-b").get("status"))
    _succeed_all(stack, "default", job + "job-c")
    _eventually(lambda: _running(stack, "default", job + "job-b", 6), "job-b runs last")


def test_pytorchjob_backfill_experiment(stack: stacks.Stack) -> None:
    _fresh(stack, queues=PYTORCH_PRIORITY["queues"])
    job = "training.kubeflow.org/job-name="
    _apply(stack, "pytorch-backfill-big-1.yaml")
    _eventually(lambda: _running(stack, "default", job + "big-1", 6), "big-1's 6 pods run")
    _apply(stack, "pytorch-backfill-big-2.yaml")
    time.sleep(1)
    _apply(stack, "pytorch-backfill-small.yaml")
    _eventually(lambda: _running(stack, "default", job + "small", 1), "the small job runs at once")
    assert _none_running(stack, job + "big-2"), "big-2 waits for room in the queue"
    _succeed_all(stack, "default", job + "big-1")
    _succeed_all(stack, "default", job + "small")
    _eventually(lambda: _running(stack, "default", job + "big-2", 6), "big-2 runs once big-1 is done")
    assert _job_condition(stack, "small") == "Succeeded"


DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  annotations: {scheduling.volcano.sh/group-min-member: "3"}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      schedulerName: volcano
      containers: [{name: web, image: nginx, resources: {requests: {cpu: "1", memory: 1Gi}}}]
"""


def test_deployment_pods_share_a_podgroup_sized_by_group_min_member(stack: stacks.Stack) -> None:
    _fresh(stack)
    done = kubectl(stack, "apply", "-f", "-", stdin=DEPLOYMENT)
    assert done.returncode == 0, done.stderr
    _eventually(lambda: _running(stack, "default", "app=web", 3), "the Deployment's 3 pods run")
    pods = _pods(stack, "default", "app=web")
    groups = {p["metadata"]["annotations"]["scheduling.k8s.io/group-name"] for p in pods}
    assert len(groups) == 1, groups
    (group_name,) = groups
    replicaset = pods[0]["metadata"]["ownerReferences"][0]
    assert group_name == f"podgroup-{replicaset['uid']}"
    group = _podgroup(stack, "default", group_name)
    assert group["spec"]["minMember"] == 3
    done = kubectl(
        stack, "annotate", "deployment", "web", "scheduling.volcano.sh/group-min-member=2", "--overwrite"
    )
    assert done.returncode == 0, done.stderr
    _eventually(
        lambda: _podgroup(stack, "default", group_name).get("spec", {}).get("minMember") == 2,
        "a changed group-min-member resizes the PodGroup",
    )
    done = kubectl(stack, "scale", "deployment", "web", "--replicas=0")
    assert done.returncode == 0, done.stderr
    _eventually(lambda: not _podgroup(stack, "default", group_name), "scaled to zero, the PodGroup goes")


def _budget_pod(name: str, scheduler: str, budget: str) -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
  annotations: {{volcano.sh/jdb-min-available: "{budget}"}}
spec:
  schedulerName: {scheduler}
  containers: [{{name: main, image: busybox, resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}}}]
"""


def test_pod_budget_annotations_are_judged_for_our_pods_only(stack: stacks.Stack) -> None:
    _fresh(stack)
    refused = kubectl(stack, "apply", "-f", "-", stdin=_budget_pod("bad-budget", "volcano", "100%"))
    assert refused.returncode != 0
    assert (
        'invalid value <"100%"> for volcano.sh/jdb-min-available, '
        "it must be a valid percentage which between 1% ~ 99%"
    ) in refused.stderr
    theirs = kubectl(stack, "apply", "-f", "-", stdin=_budget_pod("their-pod", "default-scheduler", "100%"))
    assert theirs.returncode == 0, theirs.stderr
    ours = kubectl(stack, "apply", "-f", "-", stdin=_budget_pod("good-budget", "volcano", "50%"))
    assert ours.returncode == 0, ours.stderr
    group = _eventually(
        lambda: (
            (p := _get(stack, "pod", "good-budget"))
            and p["metadata"]["annotations"].get("scheduling.k8s.io/group-name")
        ),
        "the plain pod gets its PodGroup",
    )
    assert (
        _podgroup(stack, "default", group)["metadata"]["annotations"]["volcano.sh/jdb-min-available"] == "50%"
    )
