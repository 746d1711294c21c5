"""The filters that depend on where other pods are, besides pod affinity: NodePorts and hard
PodTopologySpread, for one task, built once per placement attempt.

`Placer` asks `wants_pod_filters` whether a task needs them (it then takes the scanning path, as
tasks with pod affinity do), builds them with `pod_filters` for a scan or a fit error, and asks
`PodFilters.failure(node)` per node. `placed_pods` is the picture of every pod on every node that
pod affinity and topology spread both read: our tasks (those placed earlier in this cycle too)
and other schedulers' pods.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.scheduler.core.node_ports import HostPortCheck
from services.scheduler.core.predicates import PlacedPod, PredicateOptions, anti_affinity_terms
from services.scheduler.core.snapshot import RELEASING, TaskInfo
from services.scheduler.core.spread import SpreadCheck, hard_constraints
from services.scheduler.core.state import CycleState


def placed_pods(state: CycleState) -> list[PlacedPod]:
    """Every pod that holds a node now (not those being evicted), with what the filters read."""
    pods: list[PlacedPod] = []
    for node in range(len(state.nodes)):
        for other in state.tasks_on_node[node].values():
            if other.status != RELEASING:
                terms = tuple(anti_affinity_terms(other.info.affinity))
                pods.append(PlacedPod(node, other.info.namespace, other.info.labels, terms))
        pods.extend(PlacedPod(node, ns, labels) for ns, labels in state.other_labels[node])
        # Another scheduler's pods keep ours out of their anti-affinity domains as well.
        pods.extend(PlacedPod(node, namespace, {}, terms) for namespace, terms in state.other_anti[node])
    return pods


def wants_pod_filters(task: TaskInfo, options: PredicateOptions) -> bool:
    return options.enabled and (
        (options.node_ports and bool(task.host_ports))
        or (options.topology_spread and bool(hard_constraints(task)))
    )


@dataclass(frozen=True, slots=True)
class PodFilters:
    ports: HostPortCheck | None
    spread: SpreadCheck | None

    def failure(self, node: int) -> str | None:
        failure = self.ports.failure(node) if self.ports is not None else None
        if failure is None and self.spread is not None:
            failure = self.spread.failure(node)
        return failure


def pod_filters(
    state: CycleState, task: TaskInfo, options: PredicateOptions, *, future: bool = False
) -> PodFilters | None:
    """The task's NodePorts and spread checks; host ports of pods being evicted count unless the
    task is to wait for them to go (`future`)."""
    if not wants_pod_filters(task, options):
        return None
    ports = None
    if options.node_ports and task.host_ports:
        used = [
            [
                *state.other_ports[node],
                *(
                    port
                    for other in state.tasks_on_node[node].values()
                    if not (future and other.status == RELEASING)
                    for port in other.info.host_ports
                ),
            ]
            for node in range(len(state.nodes))
        ]
        ports = HostPortCheck(task.host_ports, used)
    spread = None
    if options.topology_spread and hard_constraints(task):
        spread = SpreadCheck(task, state.nodes, placed_pods(state))
    return PodFilters(ports, spread)
