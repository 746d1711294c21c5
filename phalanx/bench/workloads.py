"""The benchmark scenarios of issue #8, as plain data: the cluster, what runs before measuring,
and what is created while measuring.

S1 follows kube-scheduler's scheduler_perf SchedulingBasic 5000Nodes_10000Pods (nodes of 4 CPU,
32Gi, 110 pods; pods of 100m and 500Mi); S2 follows Volcano's benchmark "gang" case (nodes of 32
CPU and 256Gi; Jobs of 1 CPU / 1Gi pods with minAvailable equal to replicas, created by 16
clients), in the shapes the issue names.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from phalanx.bench.topology import TopologyLoad, mode_of, network_topology
from shared.volcano.keys import BENCHMARK

NAMESPACE = "bench"
SCHEDULER_NAME = "volcano"


@dataclass(frozen=True)
class NodeShape:
    count: int
    cpu: str
    memory: str
    pods: int = 110

    def nodes_file_entry(self) -> dict[str, Any]:
        return {
            "namePrefix": "bench-node-",
            "count": self.count,
            "cpu": self.cpu,
            "memory": self.memory,
            "pods": self.pods,
        }


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    nodes: NodeShape
    cpu: str
    memory: str
    warm_pods: int = 0  # single pods placed (and left running) before measuring
    single_pods: int = 0  # measured: bare pods, each its own gang of one
    jobs: int = 0  # measured: Volcano Jobs of `replicas` pods with minAvailable = replicas
    replicas: int = 0
    clients: int = 16
    topology: TopologyLoad | None = None  # HyperNodes and constrained Jobs (bench/topology.py)

    @property
    def measured_pods(self) -> int:
        return self.single_pods + self.jobs * self.replicas


def _s2(name: str, jobs: int, replicas: int, *, nodes: int = 1_000, summary: str = "") -> Scenario:
    return Scenario(
        name,
        summary or f"{jobs} Volcano Jobs x {replicas} pods (minAvailable {replicas}) on {nodes} nodes",
        NodeShape(nodes, "32", "256Gi"),
        cpu="1",
        memory="1Gi",
        jobs=jobs,
        replicas=replicas,
    )


def _contended() -> Scenario:
    # 10,000 one-CPU pods at 110% of the cluster's CPU: the nodes hold 10,000 / 1.1 CPUs.
    nodes = math.ceil(10_000 / 1.1 / 32)
    return _s2(
        "s2-contended",
        100,
        100,
        nodes=nodes,
        summary=f"100 Jobs x 100 pods at 110% of capacity ({nodes} nodes of 32 CPU): "
        "the gangs that fit run whole, the rest wait whole",
    )


def _topo(name: str, load: TopologyLoad, what: str) -> Scenario:
    # 1,024 nodes of 32 CPU: leaves of 16, 4 spines, a root; 96 Jobs x 64 pods of 4 CPU fill 75%.
    return Scenario(
        name,
        f"96 Volcano Jobs x 64 pods of 4 CPU on 1,024 nodes in three tiers (leaves of 16): {what}",
        NodeShape(1_024, "32", "256Gi"),
        cpu="4",
        memory="16Gi",
        jobs=96,
        replicas=64,
        topology=load,
    )


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "s1",
            "10,000 single pods on 5,000 nodes with 1,000 already running "
            "(scheduler_perf SchedulingBasic 5000Nodes_10000Pods)",
            NodeShape(5_000, "4", "32Gi"),
            cpu="100m",
            memory="500Mi",
            warm_pods=1_000,
            single_pods=10_000,
        ),
        _s2("s2", 100, 100),
        _s2("s2-10000x1", 10_000, 1),
        _s2("s2-500x20", 500, 20),
        _s2("s2-20x500", 20, 500),
        _contended(),
        _topo("topo", TopologyLoad(), "a third hard (tier 1), a third soft, a third unconstrained"),
        _topo("topo-flat", TopologyLoad(constrained=False), "the same Jobs without constraints"),
        _topo(
            "topo-nobinpack",
            TopologyLoad(binpack=False),
            "as topo, with HyperNode-level bin packing off",
        ),
    )
}


def scaled(scenario: Scenario, factor: float) -> Scenario:
    """A smaller copy for a quick look: nodes, pods and Jobs shrink together; a gang keeps its size."""
    if factor == 1:
        return scenario

    def shrink(n: int) -> int:
        return max(1, round(n * factor)) if n else 0

    return replace(
        scenario,
        name=f"{scenario.name}@{factor:g}",
        summary=f"{scenario.summary}, scaled by {factor:g}",
        nodes=replace(scenario.nodes, count=shrink(scenario.nodes.count)),
        warm_pods=shrink(scenario.warm_pods),
        single_pods=shrink(scenario.single_pods),
        jobs=shrink(scenario.jobs),
    )


def _container(scenario: Scenario) -> dict[str, Any]:
    requests = {"cpu": scenario.cpu, "memory": scenario.memory}
    return {
        "name": "main",
        "image": "busybox:1.36",
        "command": ["sleep", "3600"],
        "resources": {"requests": requests, "limits": requests},
    }


def single_pod(scenario: Scenario, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"phalanx.bench/run": "true"}},
        "spec": {"schedulerName": SCHEDULER_NAME, "containers": [_container(scenario)]},
    }


def job(scenario: Scenario, name: str) -> dict[str, Any]:
    made = _job(scenario, name)
    if scenario.topology is not None:
        constraint = network_topology(mode_of(scenario.topology, int(name[1:])))
        if constraint is not None:
            made["spec"]["networkTopology"] = constraint
    return made


def _job(scenario: Scenario, name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {BENCHMARK: "true"}},
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            "queue": "default",
            "minAvailable": scenario.replicas,
            "tasks": [
                {
                    "name": "worker",
                    "replicas": scenario.replicas,
                    "template": {"spec": {"restartPolicy": "Never", "containers": [_container(scenario)]}},
                }
            ],
        },
    }


def job_of_pod(pod_key: str) -> str:
    """`bench/j00042-worker-17` → `j00042`: Volcano names a Job's pods `<job>-<task>-<index>`."""
    return pod_key.split("/", 1)[1].rsplit("-", 2)[0]
