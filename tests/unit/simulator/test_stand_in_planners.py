"""The stand-in operators' and workload controllers' plans, from plain objects: what KubeRay and the
training operator derive for Volcano, and how the apps/v1 controllers name and count pods."""

from __future__ import annotations

from typing import Any

import pytest

from services.simulator.control.kuberay import RayClusterOperator, desired_workers, gang_size
from services.simulator.control.standin import controller_uid
from services.simulator.control.training_operator import TrainingOperator, min_resources
from services.simulator.control.workloads import ReplicaSetController, StatefulSetController
from services.simulator.store.api_resources import PODGROUPS, PODS, SERVICES, Kind
from shared.domain.resources import Resources

pytestmark = pytest.mark.unit

Obj = dict[str, Any]


class FakeView:
    def __init__(self, *objects: tuple[Kind, Obj]) -> None:
        self.objects = list(objects)

    def owned(self, kind: Kind, owner: Obj) -> list[Obj]:
        return [o for k, o in self.objects if k is kind and controller_uid(o) == owner["metadata"]["uid"]]

    def find(self, kind: Kind, namespace: str, name: str) -> Obj | None:
        return next(
            (o for k, o in self.objects if k is kind and o["metadata"]["name"] == name),
            None,
        )

    def now(self) -> str:
        return "2026-01-01T00:00:00Z"


def container(cpu: str, memory: str, *, limits_only: bool = False) -> Obj:
    amounts = {"cpu": cpu, "memory": memory}
    return {
        "name": "c",
        "image": "i",
        "resources": {"limits": amounts} if limits_only else {"requests": amounts},
    }


def group(name: str, replicas: int, **fields: Any) -> Obj:
    return {
        "groupName": name,
        "replicas": replicas,
        "template": {"spec": {"containers": [container("1", "1Gi")]}},
        **fields,
    }


def ray_cluster(*groups: Obj, labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {"name": "rc", "namespace": "ns", "uid": "rc-uid", "labels": labels or {}},
        "spec": {
            "headGroupSpec": {
                "template": {"spec": {"containers": [container("2", "4Gi", limits_only=True)]}}
            },
            "workerGroupSpecs": list(groups),
            **spec,
        },
    }


def test_kuberay_sizes_the_gang_from_head_and_desired_workers() -> None:
    members, resources = gang_size(ray_cluster(group("a", 2), group("b", 1, numOfHosts=2)))
    assert members == 1 + 2 + 2
    # The head states limits only: they stand in for its requests.
    assert resources == Resources.parse({"cpu": "6", "memory": "8Gi"})


@pytest.mark.parametrize(
    ("fields", "autoscaling", "expected"),
    [
        ({"minReplicas": 3}, False, 3),  # replicas held up to minReplicas
        ({"maxReplicas": 1}, False, 1),  # and down to maxReplicas
        ({"minReplicas": 1}, True, 1),  # autoscaling: the gang is the minimum
        ({"suspend": True}, False, 0),
    ],
)
def test_kuberay_desired_workers(fields: Obj, autoscaling: bool, expected: int) -> None:
    assert desired_workers(group("g", 2, **fields), autoscaling) == expected


def test_kuberay_plan_names_the_podgroup_and_marks_every_pod() -> None:
    cluster = ray_cluster(
        group("gpu", 2), labels={"volcano.sh/queue-name": "q", "ray.io/priority-class-name": "high"}
    )
    plan = RayClusterOperator().plan(cluster, FakeView())
    (podgroup,) = [o for k, o in plan.creates if k is PODGROUPS]
    assert podgroup["metadata"]["name"] == "ray-rc-pg"
    assert podgroup["spec"]["queue"] == "q"
    assert podgroup["spec"]["priorityClassName"] == "high"
    pods = [o for k, o in plan.creates if k is PODS]
    assert sorted(p["metadata"]["generateName"] for p in pods) == [
        "rc-gpu-worker-",
        "rc-gpu-worker-",
        "rc-head-",
    ]
    for pod in pods:
        assert pod["spec"]["schedulerName"] == "volcano"
        assert pod["spec"]["priorityClassName"] == "high"
        assert pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"] == "ray-rc-pg"
        assert pod["metadata"]["labels"]["volcano.sh/queue-name"] == "q"
    assert [o["metadata"]["name"] for k, o in plan.creates if k is SERVICES] == ["rc-head-svc"]


def pytorch_job(master: int = 1, workers: int = 2, **policy: Any) -> Obj:
    def replica(count: int, cpu: str, priority: str | None = None) -> Obj:
        spec: Obj = {"containers": [{**container(cpu, "1Gi"), "name": "pytorch"}]}
        if priority:
            spec["priorityClassName"] = priority
        return {"replicas": count, "template": {"spec": spec}}

    replicas = {"Worker": replica(workers, "1")}
    if master:
        replicas["Master"] = replica(master, "2", "high")
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "pt", "namespace": "ns", "uid": "pt-uid"},
        "spec": {"runPolicy": {"schedulingPolicy": policy}, "pytorchReplicaSpecs": replicas},
    }


def test_training_min_resources_take_higher_priority_replicas_first() -> None:
    specs = pytorch_job()["spec"]["pytorchReplicaSpecs"]
    assert min_resources(2, specs, {"high": 1000}) == Resources.parse({"cpu": "3", "memory": "2Gi"})
    assert min_resources(2, specs, {}) == Resources.parse({"cpu": "2", "memory": "2Gi"})


def test_training_operator_makes_the_podgroup_and_waits_for_it_to_be_enqueued() -> None:
    job = pytorch_job(minAvailable=2, queue="team", priorityClass="high")
    plan = TrainingOperator().plan(job, FakeView())
    (podgroup,) = [o for k, o in plan.creates if k is PODGROUPS]
    assert podgroup["metadata"]["name"] == "pt"
    assert podgroup["spec"]["minMember"] == 2
    assert podgroup["spec"]["queue"] == "team"
    assert podgroup["spec"]["priorityClassName"] == "high"
    assert not [o for k, o in plan.creates if k is PODS]
    assert plan.status is not None
    assert [c["type"] for c in plan.status["conditions"]] == ["Created"]


def test_training_operator_creates_named_pods_once_the_podgroup_is_inqueue() -> None:
    job = pytorch_job()
    enqueued = {
        "metadata": {
            "name": "pt",
            "namespace": "ns",
            "ownerReferences": [{"uid": "pt-uid", "controller": True}],
        },
        "spec": {"minMember": 3, "queue": "default", "minResources": {"cpu": "4", "memory": "3Gi"}},
        "status": {"phase": "Inqueue"},
    }
    plan = TrainingOperator().plan(job, FakeView((PODGROUPS, enqueued)))
    pods = {o["metadata"]["name"]: o for k, o in plan.creates if k is PODS}
    assert sorted(pods) == ["pt-master-0", "pt-worker-0", "pt-worker-1"]
    assert pods["pt-worker-0"]["metadata"]["annotations"]["volcano.sh/task-spec"] == "worker"
    env = {e["name"]: e["value"] for e in pods["pt-worker-0"]["spec"]["containers"][0]["env"]}
    assert env["RANK"] == "1"
    assert env["WORLD_SIZE"] == "3"
    assert env["MASTER_ADDR"] == "pt-master-0"
    assert sorted(o["metadata"]["name"] for k, o in plan.creates if k is SERVICES) == sorted(pods)


def test_training_job_succeeds_when_its_master_does_and_drops_its_podgroup() -> None:
    job = pytorch_job(workers=1)

    def pod(name: str, rtype: str, phase: str) -> Obj:
        return {
            "metadata": {
                "name": name,
                "labels": {"training.kubeflow.org/replica-type": rtype},
                "ownerReferences": [{"uid": "pt-uid", "controller": True}],
            },
            "status": {"phase": phase},
        }

    view = FakeView(
        (PODS, pod("pt-master-0", "master", "Succeeded")), (PODS, pod("pt-worker-0", "worker", "Succeeded"))
    )
    plan = TrainingOperator().plan(job, view)
    assert plan.status is not None
    assert [c["type"] for c in plan.status["conditions"] if c["status"] == "True"][-1] == "Succeeded"
    finished = {**job, "status": plan.status}
    view.objects.append((PODGROUPS, {"metadata": {"name": "pt", "namespace": "ns"}}))
    assert TrainingOperator().plan(finished, view).deletes == [(PODGROUPS, "ns", "pt")]


def workload(kind: str, replicas: int, **spec: Any) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": "w", "namespace": "ns", "uid": "w-uid"},
        "spec": {
            "replicas": replicas,
            "template": {"metadata": {"labels": {"app": "w"}}, "spec": {}},
            **spec,
        },
    }


def test_a_replicaset_creates_the_missing_pods_under_generated_names() -> None:
    plan = ReplicaSetController().plan(workload("ReplicaSet", 3), FakeView())
    assert [p["metadata"]["generateName"] for _, p in plan.creates] == ["w-"] * 3
    assert all(p["metadata"]["ownerReferences"][0]["uid"] == "w-uid" for _, p in plan.creates)


def test_a_statefulset_starts_one_pod_at_a_time_unless_parallel() -> None:
    ordered = StatefulSetController().plan(workload("StatefulSet", 3, serviceName="svc"), FakeView())
    assert [p["metadata"]["name"] for _, p in ordered.creates] == ["w-0"]
    parallel = StatefulSetController().plan(
        workload("StatefulSet", 3, podManagementPolicy="Parallel"), FakeView()
    )
    assert [p["metadata"]["name"] for _, p in parallel.creates] == ["w-0", "w-1", "w-2"]


@pytest.mark.parametrize(
    ("kind", "field", "types", "expected"),
    [
        ("TFJob", "tfReplicaSpecs", ("PS", "Worker"), ["tf-ps-0", "tf-worker-0"]),
        ("MPIJob", "mpiReplicaSpecs", ("Launcher", "Worker"), ["tf-launcher-0", "tf-worker-0"]),
    ],
)
def test_tfjob_and_mpijob_pods_are_named_by_replica_type(
    kind: str, field: str, types: tuple[str, str], expected: list[str]
) -> None:
    replicas = {
        t: {"replicas": 1, "template": {"spec": {"containers": [container("1", "1Gi")]}}} for t in types
    }
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": kind,
        "metadata": {"name": "tf", "namespace": "ns", "uid": "tf-uid"},
        "spec": {field: replicas},
    }
    enqueued = {"metadata": {"name": "tf", "namespace": "ns"}, "spec": {}, "status": {"phase": "Inqueue"}}
    plan = TrainingOperator().plan(job, FakeView((PODGROUPS, enqueued)))
    pods = {o["metadata"]["name"]: o for k, o in plan.creates if k is PODS}
    assert sorted(pods) == expected
    assert all(p["spec"]["restartPolicy"] == "Never" for p in pods.values())
