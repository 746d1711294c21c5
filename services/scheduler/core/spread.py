"""The PodTopologySpread filter of the `predicates` plugin: hard spread constraints
(`whenUnsatisfiable: DoNotSchedule`) as kube-scheduler applies them.

Placement asks `SpreadCheck.failure(node)` for a task with such constraints, after the static
filters and the resource fit; it depends on where other pods are, so it is built per placement
attempt from every pod on every node (ours, placed in this cycle too, and other schedulers').
For each constraint: the domains are the values of `topologyKey` on the nodes the pod's node
selector and required node affinity admit (nodeAffinityPolicy Honor, the default); a domain's
count is the pods in the pod's namespace that match `labelSelector` there; a node is refused
when it lacks the key, or when placing the pod there would put its domain more than `maxSkew`
above the least populated domain (which counts as zero while fewer than `minDomains` domains
exist). `ScheduleAnyway` constraints only score in kube-scheduler and are not applied here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from services.scheduler.core.predicates import PlacedPod, label_selector_matches, matches_node_affinity
from services.scheduler.core.snapshot import NodeInfo, TaskInfo

SPREAD = "node(s) didn't match pod topology spread constraints"
SPREAD_MISSING_LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"


def hard_constraints(task: TaskInfo) -> list[Mapping[str, Any]]:
    return [
        c for c in task.spread_constraints if c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"
    ]


@dataclass(frozen=True, slots=True)
class _Constraint:
    key: str
    max_skew: int
    counts: dict[str, int]  # domain -> matching pods
    floor: int  # the least populated domain's count, as the skew is measured against it
    self_match: int  # 1 when the pod itself matches the selector (it counts once placed)


class SpreadCheck:
    """Hard topology spread constraints for one task against the pods placed right now."""

    def __init__(self, task: TaskInfo, nodes: Sequence[NodeInfo], pods: Iterable[PlacedPod]) -> None:
        self._nodes = nodes
        eligible = [node for node in nodes if matches_node_affinity(task, node)]
        constraints = hard_constraints(task)
        counts: list[dict[str, int]] = []
        for constraint in constraints:
            key = str(constraint.get("topologyKey", ""))
            counts.append({node.labels[key]: 0 for node in eligible if key in node.labels})
        for pod in pods:
            if pod.namespace != task.namespace:
                continue
            labels = nodes[pod.node].labels
            for constraint, domains in zip(constraints, counts, strict=True):
                domain = labels.get(str(constraint.get("topologyKey", "")))
                if domain in domains and label_selector_matches(constraint.get("labelSelector"), pod.labels):
                    domains[domain] += 1
        self._constraints = []
        for constraint, domains in zip(constraints, counts, strict=True):
            min_domains = int(constraint.get("minDomains") or 1)
            floor = min(domains.values()) if domains and len(domains) >= min_domains else 0
            self._constraints.append(
                _Constraint(
                    key=str(constraint.get("topologyKey", "")),
                    max_skew=int(constraint.get("maxSkew") or 1),
                    counts=domains,
                    floor=floor,
                    self_match=int(label_selector_matches(constraint.get("labelSelector"), task.labels)),
                )
            )

    def failure(self, node: int) -> str | None:
        labels = self._nodes[node].labels
        for constraint in self._constraints:
            if constraint.key not in labels:
                return SPREAD_MISSING_LABEL
            count = constraint.counts.get(labels[constraint.key], 0)
            if count + constraint.self_match - constraint.floor > constraint.max_skew:
                return SPREAD
        return None
