"""predicates: kube-scheduler's node filters and the reasons Volcano reports when none passes.

Each row gives a cluster and a one-pod gang that cannot be placed, and the fit-error summary a
user sees in the PodGroup condition ("0/N nodes are unavailable: ...") with the structured
reason; the second table shows the same filters letting a pod through where it should go.
"""

from __future__ import annotations

from typing import Any

import pytest

from services.scheduler.core.snapshot import NodeInfo, OtherPod
from tests.unit.scheduler.builders import conf_with, gang, node, placed, plan, request, task

pytestmark = pytest.mark.unit

CONF = conf_with("predicates")
GPU = "nvidia.com/gpu"
AFFINITY_ZONE_A = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
        }
    }
}
TAINTED = {"taints": ({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},)}


def anti_affinity(app: str) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


def affinity(app: str) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


UNPLACEABLE: list[tuple[str, list[NodeInfo], dict[str, Any], dict[str, Any], str, str]] = [
    (
        "node-selector",
        [node("n1", labels={"zone": "b"})],
        {"node_selector": {"zone": "a"}},
        {},
        "0/1 nodes are unavailable: 1 node(s) didn't match Pod's node affinity/selector.",
        "NodeSelectorMismatch",
    ),
    (
        "required-node-affinity",
        [node("n1", labels={"zone": "b"}), node("n2")],
        {"affinity": AFFINITY_ZONE_A},
        {},
        "0/2 nodes are unavailable: 2 node(s) didn't match Pod's node affinity/selector.",
        "NodeSelectorMismatch",
    ),
    (
        "untolerated-taint",
        [node("n1", **TAINTED)],
        {},
        {},
        "0/1 nodes are unavailable: 1 node(s) had untolerated taint {dedicated: gpu}.",
        "TaintNotTolerated",
    ),
    (
        "unschedulable-node",
        [node("n1", unschedulable=True)],
        {},
        {},
        "0/1 nodes are unavailable: 1 node(s) were unschedulable.",
        "NodeUnschedulable",
    ),
    (
        "pod-count",
        [node("n1", pods="1")],
        {},
        {"other_pods": (OtherPod("n1", request("100m")),)},
        "0/1 nodes are unavailable: 1 node(s) pod number exceeded.",
        "TooManyPods",
    ),
    (
        "gpu-missing",
        [node("n1")],
        {"req": request(**{GPU: "1"})},
        {},
        "0/1 nodes are unavailable: 1 Insufficient nvidia.com/gpu.",
        "NotEnoughResources",
    ),
    (
        "memory",
        [node("n1", memory="1Gi")],
        {"req": request("1", "2Gi")},
        {},
        "0/1 nodes are unavailable: 1 Insufficient memory.",
        "NotEnoughResources",
    ),
    (
        "not-ready-nodes-are-not-counted",
        [node("n1", cpu="1"), node("n2", cpu="64", ready=False)],
        {"req": request("2")},
        {},
        "0/1 nodes are unavailable: 1 Insufficient cpu.",
        "NotEnoughResources",
    ),
    (
        "mixed-reasons-sorted",
        [node("n1", cpu="1"), node("n2", **TAINTED), node("n3", unschedulable=True)],
        {"req": request("2")},
        {},
        "0/3 nodes are unavailable: 1 Insufficient cpu, 1 node(s) had untolerated taint "
        "{dedicated: gpu}, 1 node(s) were unschedulable.",
        "NotEnoughResources",
    ),
]


@pytest.mark.parametrize(
    ("nodes", "task_fields", "snapshot_fields", "fit_errors", "reason"),
    [row[1:] for row in UNPLACEABLE],
    ids=[row[0] for row in UNPLACEABLE],
)
def test_unplaceable_pod_reports_each_nodes_reason(
    nodes: list[NodeInfo],
    task_fields: dict[str, Any],
    snapshot_fields: dict[str, Any],
    fit_errors: str,
    reason: str,
) -> None:
    fields = dict(task_fields)
    req = fields.pop("req", None)
    g = gang("job", 1, req, task_fields=fields)
    result = plan(nodes, [g], conf=CONF, **snapshot_fields)
    assert result.binds == ()
    verdict = result.verdict_for("job")
    assert verdict is not None
    assert verdict.fit_errors == fit_errors
    assert verdict.reason == reason
    assert verdict.message.endswith(f"Origin reason is job-worker-0: {fit_errors}")


PLACEABLE: list[tuple[str, list[NodeInfo], dict[str, Any], str]] = [
    (
        "node-selector-match",
        [node("n1", labels={"zone": "b"}), node("n2", labels={"zone": "a"})],
        {"node_selector": {"zone": "a"}},
        "n2",
    ),
    (
        "node-affinity-match",
        [node("n1", labels={"zone": "b"}), node("n2", labels={"zone": "a"})],
        {"affinity": AFFINITY_ZONE_A},
        "n2",
    ),
    (
        "toleration-equal",
        [node("n1", **TAINTED)],
        {"tolerations": ({"key": "dedicated", "operator": "Equal", "value": "gpu"},)},
        "n1",
    ),
    ("toleration-exists", [node("n1", **TAINTED)], {"tolerations": ({"operator": "Exists"},)}, "n1"),
    (
        "prefer-no-schedule-is-not-a-filter",
        [node("n1", taints=({"key": "k", "value": "v", "effect": "PreferNoSchedule"},))],
        {},
        "n1",
    ),
    (
        "gpu-node-only",
        [node("n1"), node("n2", extra={GPU: "4"})],
        {"req": request(**{GPU: "2"})},
        "n2",
    ),
    (
        "unschedulable-tolerated",
        [node("n1", unschedulable=True)],
        {"tolerations": ({"key": "node.kubernetes.io/unschedulable", "operator": "Exists"},)},
        "n1",
    ),
]


@pytest.mark.parametrize(
    ("nodes", "task_fields", "expected_node"),
    [row[1:] for row in PLACEABLE],
    ids=[row[0] for row in PLACEABLE],
)
def test_filters_let_the_pod_through_where_it_belongs(
    nodes: list[NodeInfo], task_fields: dict[str, Any], expected_node: str
) -> None:
    fields = dict(task_fields)
    req = fields.pop("req", None)
    result = plan(nodes, [gang("job", 1, req, task_fields=fields)], conf=CONF)
    assert placed(result) == {"job-worker-0": expected_node}


def test_predicates_plugin_off_checks_resources_only() -> None:
    result = plan(
        [node("n1", labels={"zone": "b"})],
        [gang("job", 1, task_fields={"node_selector": {"zone": "a"}})],
        conf=conf_with("nodeorder"),
    )
    assert placed(result) == {"job-worker-0": "n1"}


@pytest.mark.parametrize(
    ("node_count", "placeable"), [(2, False), (3, True)], ids=["too-few-hosts", "one-per-host"]
)
def test_anti_affinity_by_hostname_spreads_a_gang(node_count: int, placeable: bool) -> None:
    fields = {"labels": {"app": "etcd"}, "affinity": anti_affinity("etcd")}
    nodes = [node(f"n{i}", cpu="16") for i in range(node_count)]
    result = plan(nodes, [gang("etcd", 3, task_fields=fields)], conf=CONF)
    if placeable:
        assert sorted(placed(result).values()) == ["n0", "n1", "n2"]
    else:
        assert result.binds == ()
        verdict = result.verdict_for("etcd")
        assert verdict is not None
        assert "node(s) didn't match pod anti-affinity rules" in verdict.fit_errors


def test_pod_affinity_by_hostname_follows_the_matching_pod() -> None:
    others = (OtherPod("n2", request("100m"), namespace="default", labels={"app": "db"}),)
    result = plan(
        [node("n1"), node("n2"), node("n3")],
        [gang("web", 1, task_fields={"affinity": affinity("db")})],
        conf=CONF,
        other_pods=others,
    )
    assert placed(result) == {"web-worker-0": "n2"}


def test_pod_affinity_to_itself_lets_the_first_pod_go_anywhere() -> None:
    fields = {"labels": {"app": "cache"}, "affinity": affinity("cache")}
    result = plan([node("n1"), node("n2")], [gang("cache", 2, task_fields=fields)], conf=CONF)
    assert len(set(placed(result).values())) == 1


def test_existing_pods_anti_affinity_keeps_newcomers_away() -> None:
    loner = task(
        "loner-worker-0",
        labels={"app": "loner"},
        affinity=anti_affinity("web"),
        node="n1",
        status="Running",
    )
    result = plan(
        [node("n1", cpu="16"), node("n2", cpu="1")],
        [
            gang("loner", tasks=[loner], phase="Running"),
            gang("web", 1, task_fields={"labels": {"app": "web"}}),
        ],
        conf=CONF,
    )
    assert placed(result) == {"web-worker-0": "n2"}


def test_unused_task_in_selector_does_not_change_placement() -> None:
    result = plan([node("n1"), node("n2")], [gang("job", 1)], conf=CONF)
    assert placed(result) == {"job-worker-0": "n1"}
