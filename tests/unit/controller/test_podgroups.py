"""PodGroups for plain pods and other operators' workloads, and PodGroup status."""

from __future__ import annotations

from typing import Any

import pytest

from services.controller.core.podgroups import (
    foreign_owner,
    group_annotation_patch,
    podgroup_for_pod,
    podgroup_status,
    workload_podgroup,
)

pytestmark = pytest.mark.unit

RS_REF = {
    "apiVersion": "apps/v1",
    "kind": "ReplicaSet",
    "name": "web-abc",
    "uid": "rs-1",
    "controller": True,
    "blockOwnerDeletion": True,
}


def plain_pod(
    *,
    annotations: dict[str, str] | None = None,
    owner: dict[str, Any] | None = None,
    scheduler: str = "volcano",
    **spec: Any,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "ns", "uid": "pod-1", "annotations": annotations or {}}
    if owner:
        meta["ownerReferences"] = [owner]
    return {
        "metadata": meta,
        "spec": {
            "schedulerName": scheduler,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}],
            **spec,
        },
    }


def test_orphan_pod_gets_its_own_podgroup() -> None:
    pg = podgroup_for_pod(
        plain_pod(annotations={"scheduling.volcano.sh/queue-name": "q1"}, priorityClassName="high")
    )
    assert pg is not None
    assert pg["metadata"]["name"] == "podgroup-pod-1"
    assert pg["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "p",
            "uid": "pod-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert pg["spec"] == {
        "minMember": 1,
        "minResources": {
            "count/pods": "1",
            "cpu": "500m",
            "memory": "1Gi",
            "pods": "1",
            "requests.cpu": "500m",
            "requests.memory": "1Gi",
        },
        "priorityClassName": "high",
        "queue": "q1",
    }
    assert pg["status"] == {"phase": "Pending"}


def test_owned_pod_shares_its_owners_podgroup_and_inherits_annotations() -> None:
    owner_annotations = {
        "scheduling.volcano.sh/group-min-member": "3",
        "volcano.sh/sla-waiting-time": "1h",
        "other/thing": "x",
    }
    pg = podgroup_for_pod(plain_pod(owner=RS_REF), owner_annotations)
    assert pg is not None
    assert pg["metadata"]["name"] == "podgroup-rs-1"
    assert pg["metadata"]["ownerReferences"] == [RS_REF]
    assert pg["metadata"]["annotations"] == {"volcano.sh/sla-waiting-time": "1h"}
    assert pg["spec"]["minMember"] == 3
    assert pg["spec"]["minResources"]["cpu"] == "1500m"
    assert "queue" not in pg["spec"]  # the CRD default ("default") applies


@pytest.mark.parametrize("value", ["x", "-2"], ids=["not-a-number", "negative"])
def test_bad_min_member_annotation_means_one(value: str) -> None:
    pg = podgroup_for_pod(plain_pod(owner=RS_REF), {"scheduling.volcano.sh/group-min-member": value})
    assert pg is not None
    assert pg["spec"]["minMember"] == 1


@pytest.mark.parametrize(
    ("pod", "needs"),
    [
        (plain_pod(scheduler="default-scheduler"), False),
        (plain_pod(annotations={"scheduling.k8s.io/group-name": "pg-from-kubeflow"}), False),
        (plain_pod(), True),
    ],
    ids=["other-scheduler", "already-grouped", "ours-ungrouped"],
)
def test_only_our_ungrouped_pods_get_a_podgroup(pod: dict[str, Any], needs: bool) -> None:
    assert (podgroup_for_pod(pod) is not None) == needs


def test_pod_hints_are_copied_to_the_podgroup() -> None:
    pod = plain_pod(
        annotations={
            "volcano.sh/preemptable": "true",
            "volcano.sh/jdb-min-available": "2",
            "volcano.sh/network-topology-mode": "Soft",
            "volcano.sh/network-topology-highest-tier": "2",
        }
    )
    pod["metadata"]["labels"] = {"volcano.sh/cooldown-time": "60s"}
    pg = podgroup_for_pod(pod)
    assert pg is not None
    assert pg["metadata"]["annotations"] == {
        "volcano.sh/preemptable": "true",
        "volcano.sh/jdb-min-available": "2",
    }
    assert pg["metadata"]["labels"] == {"volcano.sh/cooldown-time": "60s"}
    assert pg["spec"]["networkTopology"] == {"mode": "soft", "highestTierAllowed": 2}


def test_annotation_patch_links_pod_to_group() -> None:
    assert group_annotation_patch("podgroup-pod-1") == {
        "metadata": {"annotations": {"scheduling.k8s.io/group-name": "podgroup-pod-1"}}
    }


@pytest.mark.parametrize(
    ("owner", "expected"),
    [
        (
            {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "controller": True},
            "kubeflow.org/PyTorchJob",
        ),
        ({"apiVersion": "ray.io/v1", "kind": "RayCluster", "controller": True}, "ray.io/RayCluster"),
        ({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "controller": True}, None),
    ],
    ids=["kubeflow", "kuberay", "volcano-job"],
)
def test_foreign_owner(owner: dict[str, Any], expected: str | None) -> None:
    assert foreign_owner({"metadata": {"ownerReferences": [owner]}}) == expected


def _member(phase: str, node: str | None = "n1", group: str = "pg") -> dict[str, Any]:
    spec = {"nodeName": node} if node else {}
    return {
        "metadata": {"namespace": "ns", "annotations": {"scheduling.k8s.io/group-name": group}},
        "spec": spec,
        "status": {"phase": phase},
    }


PG: dict[str, Any] = {
    "metadata": {"name": "pg", "namespace": "ns"},
    "spec": {"minMember": 2},
    "status": {"phase": "Inqueue", "conditions": [{"type": "Scheduled", "status": "True"}]},
}


@pytest.mark.parametrize(
    ("members", "kwargs", "phase"),
    [
        ([_member("Pending", None), _member("Pending", None)], {}, "Inqueue"),
        ([_member("Running"), _member("Pending", None)], {}, "Inqueue"),
        ([_member("Running"), _member("Pending")], {}, "Running"),
        ([_member("Succeeded"), _member("Failed")], {}, "Completed"),
        ([_member("Running"), _member("Running")], {"unschedulable_now": True}, "Unknown"),
        ([_member("Running"), _member("Running", group="other")], {}, "Inqueue"),
    ],
    ids=[
        "admitted-waiting",
        "short-of-gang",
        "bound-gang-runs",
        "all-finished",
        "unschedulable-while-running",
        "other-groups-pods-ignored",
    ],
)
def test_podgroup_phase(members: list[dict[str, Any]], kwargs: dict[str, bool], phase: str) -> None:
    assert podgroup_status(PG, members, **kwargs)["phase"] == phase


def test_empty_gang_of_zero_is_completed_as_in_volcano() -> None:
    empty = {**PG, "spec": {"minMember": 0}}
    assert podgroup_status(empty, [])["phase"] == "Completed"


def test_pending_podgroup_stays_pending_until_admitted() -> None:
    pending = {**PG, "status": {"phase": "Pending"}}
    assert podgroup_status(pending, [])["phase"] == "Pending"
    assert podgroup_status(pending, [], admitted=True)["phase"] == "Inqueue"


def test_podgroup_counters_and_conditions_kept() -> None:
    status = podgroup_status(PG, [_member("Running"), _member("Succeeded"), _member("Failed")])
    assert (status["running"], status["succeeded"], status["failed"]) == (1, 1, 1)
    assert status["conditions"] == PG["status"]["conditions"]


RS = {
    "kind": "ReplicaSet",
    "metadata": {
        "name": "web-abc",
        "uid": "rs-1",
        "annotations": {"scheduling.volcano.sh/group-min-member": "2"},
    },
    "spec": {"replicas": 2},
}


def test_workload_scaled_to_zero_drops_its_podgroup() -> None:
    assert workload_podgroup({**RS, "spec": {"replicas": 0}}, None, None) == ("delete", None)


def test_workload_first_pod_creates_then_updates_its_podgroup() -> None:
    pod = plain_pod(owner=RS_REF)
    action, created = workload_podgroup(RS, pod, None)
    assert action == "create"
    assert created is not None
    assert (created["metadata"]["name"], created["spec"]["minMember"]) == ("podgroup-rs-1", 2)
    assert workload_podgroup(RS, pod, created) == ("none", None)
    raised = {
        **RS,
        "metadata": {**RS["metadata"], "annotations": {"scheduling.volcano.sh/group-min-member": "3"}},
    }
    action, updated = workload_podgroup(raised, pod, {**created, "status": {"phase": "Running"}})
    assert action == "update"
    assert updated is not None
    assert updated["spec"]["minMember"] == 3
    assert updated["status"] == {"phase": "Running"}


@pytest.mark.parametrize(
    ("workload", "pod"),
    [
        ({**RS, "kind": "Deployment"}, plain_pod()),
        (RS, plain_pod(annotations={"scheduling.k8s.io/group-name": "podgroup-rs-1"})),
        (RS, None),
    ],
    ids=["not-a-workload-kind", "pod-already-grouped", "no-pod-yet"],
)
def test_workload_changes_that_touch_nothing(workload: dict[str, Any], pod: dict[str, Any] | None) -> None:
    assert workload_podgroup(workload, pod, None) == ("none", None)


def test_a_kept_failed_pod_does_not_fill_a_resumed_gang() -> None:
    """ResumeJob keeps the Failed pod; the new gang must wait for placement, not read Completed."""
    resumed = {**PG, "spec": {"minMember": 1}, "status": {"phase": "Inqueue"}}
    status = podgroup_status(resumed, [_member("Failed"), _member("Pending", None)])
    assert status["phase"] == "Inqueue"
    assert status["failed"] == 1


def test_an_unknown_gang_stays_unknown_while_it_runs_short_and_recovers_once_whole() -> None:
    unknown = {**PG, "status": {"phase": "Unknown"}}
    short = [_member("Running"), _member("Pending", None)]
    assert podgroup_status(unknown, short)["phase"] == "Unknown"
    assert podgroup_status(unknown, [_member("Running"), _member("Running")])["phase"] == "Running"
    # Restarted: nothing runs any more, so it is Pending again, as Volcano has it.
    restarted = [_member("Pending", None), _member("Pending", None)]
    assert podgroup_status(unknown, restarted)["phase"] == "Pending"
