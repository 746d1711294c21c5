"""The simulator's stand-in controllers, driven over HTTP with the official client as users drive
the real ones: Deployments, ReplicaSets, StatefulSets, KubeRay's RayCluster and Kubeflow's jobs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from services.simulator.app import write_kubeconfig
from tests.integration.simulator.conftest import eventually
from tests.simulator_thread import RunningSimulator

pytestmark = pytest.mark.integration

CONTAINER = {
    "name": "main",
    "image": "busybox",
    "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}},
}


def _pods(core: client.CoreV1Api, selector: str) -> list[Any]:
    return list(core.list_namespaced_pod("default", label_selector=selector).items)


def test_a_deployment_runs_its_pods_through_a_replicaset(
    api_client: client.ApiClient, core: client.CoreV1Api
) -> None:
    apps = client.AppsV1Api(api_client)
    apps.create_namespaced_deployment(
        "default",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "annotations": {"scheduling.volcano.sh/group-min-member": "2"}},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [CONTAINER]}},
            },
        },
    )
    running = eventually(
        lambda: (
            [p for p in _pods(core, "app=web") if p.status.phase == "Running"]
            if len(_pods(core, "app=web")) == 2
            else []
        )
    )
    assert len(running) == 2
    replicasets = apps.list_namespaced_replica_set("default").items
    (replicaset,) = [rs for rs in replicasets if rs.metadata.name.startswith("web-")]
    assert replicaset.metadata.annotations["scheduling.volcano.sh/group-min-member"] == "2"
    for pod in running:
        assert pod.metadata.name.startswith(replicaset.metadata.name + "-")
        (owner,) = pod.metadata.owner_references
        assert (owner.kind, owner.name, owner.controller) == ("ReplicaSet", replicaset.metadata.name, True)
    ready = eventually(
        lambda: (apps.read_namespaced_deployment("web", "default").status.ready_replicas or 0) == 2
    )
    assert ready
    apps.patch_namespaced_deployment("web", "default", {"spec": {"replicas": 1}})
    assert eventually(
        lambda: len([p for p in _pods(core, "app=web") if not p.metadata.deletion_timestamp]) == 1
    )


def test_a_statefulset_names_its_pods_by_ordinal_and_starts_them_in_order(
    api_client: client.ApiClient, core: client.CoreV1Api
) -> None:
    apps = client.AppsV1Api(api_client)
    apps.create_namespaced_stateful_set(
        "default",
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db"},
            "spec": {
                "replicas": 3,
                "serviceName": "db",
                "selector": {"matchLabels": {"app": "db"}},
                "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [CONTAINER]}},
            },
        },
    )
    assert eventually(
        lambda: sorted(p.metadata.name for p in _pods(core, "app=db")) == ["db-0", "db-1", "db-2"]
    )
    pod = core.read_namespaced_pod("db-1", "default")
    assert (pod.spec.hostname, pod.spec.subdomain) == ("db-1", "db")
    assert pod.metadata.labels["apps.kubernetes.io/pod-index"] == "1"
    assert eventually(lambda: apps.read_namespaced_stateful_set("db", "default").status.ready_replicas == 3)


RAY_CLUSTER = {
    "apiVersion": "ray.io/v1",
    "kind": "RayCluster",
    "metadata": {
        "name": "raytest",
        "labels": {"ray.io/scheduler-name": "volcano", "volcano.sh/queue-name": "kuberay-test-queue"},
    },
    "spec": {
        "rayVersion": "2.9.0",
        "headGroupSpec": {
            "rayStartParams": {},
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "ray-head",
                            "image": "rayproject/ray:2.9.0",
                            "resources": {
                                "requests": {"cpu": "1", "memory": "2Gi"},
                                "limits": {"cpu": "1", "memory": "2Gi"},
                            },
                        }
                    ]
                }
            },
        },
        "workerGroupSpecs": [
            {
                "groupName": "worker",
                "rayStartParams": {},
                "replicas": 2,
                "minReplicas": 2,
                "maxReplicas": 2,
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "ray-worker",
                                "image": "rayproject/ray:2.9.0",
                                "resources": {
                                    "requests": {"cpu": "1", "memory": "1Gi"},
                                    "limits": {"cpu": "1", "memory": "1Gi"},
                                },
                            }
                        ]
                    }
                },
            }
        ],
    },
}


def test_a_raycluster_gets_kuberays_podgroup_and_annotated_pods(
    custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    custom.create_namespaced_custom_object("ray.io", "v1", "default", "rayclusters", RAY_CLUSTER)
    group = eventually(lambda: _find_group(custom, "ray-raytest-pg"))
    assert group["spec"]["minMember"] == 3
    assert group["spec"]["minResources"] == {"cpu": "3", "memory": "4Gi"}
    assert group["spec"]["queue"] == "kuberay-test-queue"
    assert group["metadata"]["ownerReferences"][0]["kind"] == "RayCluster"
    pods = eventually(
        lambda: (
            _pods(core, "ray.io/cluster=raytest") if len(_pods(core, "ray.io/cluster=raytest")) == 3 else []
        )
    )
    assert sorted(p.metadata.labels["ray.io/node-type"] for p in pods) == ["head", "worker", "worker"]
    for pod in pods:
        assert pod.spec.scheduler_name == "volcano"
        assert pod.metadata.annotations["scheduling.k8s.io/group-name"] == "ray-raytest-pg"
        assert pod.metadata.labels["volcano.sh/queue-name"] == "kuberay-test-queue"
    # Scaling the worker group resizes the gang, as KubeRay updates its PodGroup.
    grown = {**RAY_CLUSTER["spec"]["workerGroupSpecs"][0], "replicas": 3, "maxReplicas": 3}
    custom.patch_namespaced_custom_object(
        "ray.io", "v1", "default", "rayclusters", "raytest", {"spec": {"workerGroupSpecs": [grown]}}
    )
    assert eventually(
        lambda: (_find_group(custom, "ray-raytest-pg") or {}).get("spec", {}).get("minMember") == 4
    )
    custom.delete_namespaced_custom_object("ray.io", "v1", "default", "rayclusters", "raytest")
    assert eventually(
        lambda: not _pods(core, "ray.io/cluster=raytest") and _find_group(custom, "ray-raytest-pg") is None
    )


PYTORCH_JOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "mnist"},
    "spec": {
        "runPolicy": {"schedulingPolicy": {"queue": "default"}},
        "pytorchReplicaSpecs": {
            "Master": {
                "replicas": 1,
                "restartPolicy": "OnFailure",
                "template": {"spec": {"containers": [{**CONTAINER, "name": "pytorch"}]}},
            },
            "Worker": {
                "replicas": 2,
                "restartPolicy": "OnFailure",
                "template": {"spec": {"containers": [{**CONTAINER, "name": "pytorch"}]}},
            },
        },
    },
}


def test_a_pytorchjob_waits_for_its_podgroup_to_be_enqueued_then_creates_named_pods(
    simulator: RunningSimulator, custom: client.CustomObjectsApi, core: client.CoreV1Api
) -> None:
    custom.create_namespaced_custom_object("kubeflow.org", "v1", "default", "pytorchjobs", PYTORCH_JOB)
    group = eventually(lambda: _find_group(custom, "mnist"))
    assert group["spec"]["minMember"] == 3
    assert group["spec"]["minResources"] == {"cpu": "1500m", "memory": "1536Mi"}
    assert not _pods(core, "training.kubeflow.org/job-name=mnist")  # no scheduler enqueued it yet
    custom.patch_namespaced_custom_object(
        "scheduling.volcano.sh", "v1beta1", "default", "podgroups", "mnist", {"status": {"phase": "Inqueue"}}
    )
    pods = eventually(
        lambda: (
            _pods(core, "training.kubeflow.org/job-name=mnist")
            if len(_pods(core, "training.kubeflow.org/job-name=mnist")) == 3
            else []
        )
    )
    assert sorted(p.metadata.name for p in pods) == ["mnist-master-0", "mnist-worker-0", "mnist-worker-1"]
    worker = core.read_namespaced_pod("mnist-worker-1", "default")
    env = {e.name: e.value for e in worker.spec.containers[0].env}
    assert (env["MASTER_ADDR"], env["WORLD_SIZE"], env["RANK"]) == ("mnist-master-0", "3", "2")
    assert worker.metadata.annotations["scheduling.k8s.io/group-name"] == "mnist"
    assert worker.metadata.annotations["volcano.sh/task-spec"] == "worker"
    job = custom.get_namespaced_custom_object("kubeflow.org", "v1", "default", "pytorchjobs", "mnist")
    assert [c["type"] for c in job["status"]["conditions"]] == ["Created"]


def _find_group(custom: client.CustomObjectsApi, name: str) -> dict[str, Any] | None:
    try:
        return dict(
            custom.get_namespaced_custom_object(
                "scheduling.volcano.sh", "v1beta1", "default", "podgroups", name
            )
        )
    except client.ApiException as error:
        if error.status == 404:
            return None
        raise


def test_kubectl_scale_goes_through_the_scale_subresource(
    simulator: RunningSimulator, tmp_path: Path
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    write_kubeconfig(kubeconfig, simulator.url)
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "scaled", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "scaled"}},
            "template": {"metadata": {"labels": {"app": "scaled"}}, "spec": {"containers": [CONTAINER]}},
        },
    }

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        command = ["kubectl", "--kubeconfig", str(kubeconfig), *args]
        return subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=60)

    assert run("apply", "-f", "-", stdin=json.dumps(manifest)).returncode == 0
    done = run("scale", "deployment", "scaled", "--replicas=0")
    assert done.returncode == 0, done.stderr
    shown = json.loads(run("get", "deployment", "scaled", "-o", "json").stdout)
    assert shown["spec"]["replicas"] == 0
