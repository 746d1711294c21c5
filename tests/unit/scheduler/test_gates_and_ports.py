"""Scheduling gates, host ports, and other schedulers' pods as the cycle sees them (#16).

A gated pod is never placed and a gang held back by its gates takes no room in its queue; two
pods asking for the same host port and protocol never share a node (kube-scheduler's NodePorts
rule, wildcard host IPs included); pods placed by another scheduler count for host ports and
for pod anti-affinity in both directions.
"""

from __future__ import annotations

from typing import Any

import pytest

from services.scheduler.core import parse_conf
from services.scheduler.core.gates import GATED_MESSAGE, SCHEDULING_GATED
from services.scheduler.core.node_ports import NODE_PORTS, conflicts, host_ports_of
from services.scheduler.core.snapshot import OtherPod
from tests.unit.scheduler.builders import (
    bound_gangs,
    conf_with,
    gang,
    node,
    placed,
    plan,
    queue,
    request,
    running,
    task,
)

pytestmark = pytest.mark.unit

CONF = conf_with("predicates", "proportion", "nodeorder")
PORT_8080 = (("", "TCP", 8080),)


def test_a_gated_gang_is_neither_enqueued_nor_placed_and_says_why() -> None:
    gated = gang("gated", 2, phase="Pending", task_fields={"scheduling_gated": True})
    result = plan([node("n1"), node("n2")], [gated], conf=CONF)
    assert result.enqueued == ()
    assert result.binds == ()
    found = result.verdict_for("gated")
    assert found is not None
    assert found.reason == SCHEDULING_GATED
    assert GATED_MESSAGE in found.message
    assert "2/2 tasks in gang are gated, 2 minAvailable" in found.message


def test_an_admitted_gated_gang_holds_none_of_its_queue() -> None:
    # Both gangs ask for the queue's whole capability as their minimum; the gated one was
    # admitted first (Inqueue), yet the other is admitted and placed beside it.
    team = queue("team", capability={"cpu": "4", "memory": "8Gi"})
    minimum = {"min_resources": request("4", "2Gi")}
    gated = gang(
        "gated", 2, request("2"), queue="team", task_fields={"scheduling_gated": True}, age=10, **minimum
    )
    other = gang("other", 2, request("2"), queue="team", phase="Pending", **minimum)
    result = plan([node("n1", cpu="8")], [gated, other], [team], conf=CONF)
    assert result.enqueued == ("other",)
    # The same cycle admits and places it (allocate follows enqueue).
    assert bound_gangs(result) == ["other"]


def test_ungated_members_that_make_the_minimum_run_without_the_gated_ones() -> None:
    members = [task("elastic-0"), task("elastic-1"), task("elastic-2", scheduling_gated=True)]
    result = plan([node("n1")], [gang("elastic", tasks=members, min_member=2)], conf=CONF)
    assert sorted(placed(result)) == ["elastic-0", "elastic-1"]


def test_a_bound_pod_whose_gates_linger_is_still_counted() -> None:
    members = [task("held-0", node="n1", status="Running", scheduling_gated=True), task("held-1")]
    result = plan([node("n1")], [gang("held", tasks=members, min_member=2)], conf=CONF)
    assert placed(result) == {"held-1": "n1"}


def test_pods_asking_for_one_host_port_go_to_different_nodes() -> None:
    web = gang("web", 2, task_fields={"host_ports": PORT_8080})
    result = plan([node("n1", cpu="8"), node("n2", cpu="8")], [web], conf=CONF)
    assert sorted(placed(result).values()) == ["n1", "n2"]


def test_a_third_pod_for_the_port_waits_with_kube_schedulers_reason() -> None:
    web = running(gang("web", 2, task_fields={"host_ports": PORT_8080}), ["n1", "n2"])
    third = gang("third", 1, task_fields={"host_ports": PORT_8080})
    result = plan([node("n1", cpu="8"), node("n2", cpu="8")], [web, third], conf=CONF)
    assert placed(result) == {}
    found = result.verdict_for("third")
    assert found is not None
    assert f"0/2 nodes are unavailable: 2 {NODE_PORTS}." in found.message
    assert found.reason == "HostPortConflict"


def test_the_node_ports_filter_can_be_switched_off() -> None:
    conf_off = parse_conf(
        """
actions: "enqueue, allocate"
tiers:
- plugins: [{name: priority}, {name: gang}]
- plugins: [{name: predicates, arguments: {predicate.NodePortsEnable: false}}, {name: nodeorder}]
"""
    )
    web = running(gang("web", 1, task_fields={"host_ports": PORT_8080}), ["n1"])
    other = gang("other", 1, task_fields={"host_ports": PORT_8080})
    assert placed(plan([node("n1", cpu="8")], [web, other], conf=conf_off)) == {"other-worker-0": "n1"}


@pytest.mark.parametrize(
    ("wanted", "used", "clash"),
    [
        (("", "TCP", 80), ("", "TCP", 80), True),
        (("0.0.0.0", "TCP", 80), ("10.0.0.1", "TCP", 80), True),
        (("10.0.0.1", "TCP", 80), ("", "TCP", 80), True),
        (("10.0.0.1", "TCP", 80), ("10.0.0.1", "TCP", 80), True),
        (("10.0.0.1", "TCP", 80), ("10.0.0.2", "TCP", 80), False),
        (("", "TCP", 80), ("", "UDP", 80), False),
        (("", "TCP", 80), ("", "TCP", 81), False),
    ],
)
def test_host_port_conflicts_follow_kube_scheduler(
    wanted: tuple[str, str, int], used: tuple[str, str, int], clash: bool
) -> None:
    assert conflicts(wanted, used) is clash


def test_host_ports_are_read_from_containers_and_sidecars_only() -> None:
    spec: dict[str, Any] = {
        "containers": [{"ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 9090}]}],
        "initContainers": [
            {"restartPolicy": "Always", "ports": [{"hostPort": 53, "protocol": "UDP", "hostIP": "10.0.0.1"}]},
            {"ports": [{"hostPort": 7000}]},  # runs to completion before the others start
        ],
    }
    assert host_ports_of(spec) == (("", "TCP", 8080), ("10.0.0.1", "UDP", 53))


def test_another_schedulers_pod_holds_its_host_port() -> None:
    # n2 is the busier node, so only the port keeps the pod off n1.
    others = (
        OtherPod(node="n1", request=request("1"), namespace="default", host_ports=PORT_8080),
        OtherPod(node="n2", request=request("3"), namespace="default"),
    )
    web = gang("web", 1, task_fields={"host_ports": PORT_8080})
    result = plan([node("n1"), node("n2")], [web], conf=CONF, other_pods=others)
    assert placed(result) == {"web-worker-0": "n2"}


def test_another_schedulers_pod_keeps_ours_out_by_its_anti_affinity() -> None:
    term = {"labelSelector": {"matchLabels": {"app": "batch"}}, "topologyKey": "kubernetes.io/hostname"}
    others = (
        OtherPod(node="n1", request=request("1"), namespace="default", anti_affinity=(term,)),
        OtherPod(node="n2", request=request("3"), namespace="default"),
    )
    batch = gang("batch", 1, task_fields={"labels": {"app": "batch"}})
    result = plan([node("n1"), node("n2")], [batch], conf=CONF, other_pods=others)
    assert placed(result) == {"batch-worker-0": "n2"}
