"""Node filters of the `predicates` plugin, with kube-scheduler's failure reasons.

Static filters (node unschedulable, nodeSelector and required node affinity, taints and
tolerations) depend only on the task's spec and the node, so the placement module evaluates
them once per distinct task spec and caches the candidate list. Pod affinity and anti-affinity
depend on where other pods are, so they are evaluated per placement through `PodAffinityCheck`.
Resources and pod count are checked by the placement module itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from services.scheduler.core.devices import CANNOT_ALLOCATE, node_can_ever
from services.scheduler.core.snapshot import NodeInfo, TaskInfo
from services.scheduler.core.volumes import (
    NO_VOLUME_TO_BIND,
    UNBOUND_IMMEDIATE,
    VOLUME_NODE_CONFLICT,
    volume_failure,
)

NODE_UNSCHEDULABLE = "node(s) were unschedulable"
NODE_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
POD_AFFINITY = "node(s) didn't match pod affinity rules"
POD_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
POD_NUMBER_EXCEEDED = "node(s) pod number exceeded"

# Structured reasons (GangVerdict.reason) for each kube-scheduler message prefix.
STRUCTURED_REASONS = {
    NODE_UNSCHEDULABLE: "NodeUnschedulable",
    NODE_AFFINITY: "NodeSelectorMismatch",
    POD_AFFINITY: "PodAffinityMismatch",
    POD_ANTI_AFFINITY: "PodAntiAffinityConflict",
    EXISTING_ANTI_AFFINITY: "PodAntiAffinityConflict",
    POD_NUMBER_EXCEEDED: "TooManyPods",
    "node(s) didn't have free ports for the requested pod ports": "HostPortConflict",
    VOLUME_NODE_CONFLICT: "VolumeNodeAffinityConflict",
    NO_VOLUME_TO_BIND: "VolumeBindConflict",
    UNBOUND_IMMEDIATE: "UnboundImmediateVolumeClaim",
    CANNOT_ALLOCATE: "DeviceClaimUnallocatable",
}
_UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


def structured_reason(message: str) -> str:
    if message.startswith("Insufficient "):
        return "NotEnoughResources"
    if message.startswith("node(s) had untolerated taint"):
        return "TaintNotTolerated"
    if message.startswith("node(s) didn't match pod topology spread constraints"):
        return "PodTopologySpreadMismatch"
    return STRUCTURED_REASONS.get(message, "Unschedulable")


@dataclass(frozen=True, slots=True)
class PredicateOptions:
    enabled: bool = True
    node_affinity: bool = True
    taint_toleration: bool = True
    pod_affinity: bool = True
    node_ports: bool = True
    topology_spread: bool = True


def static_failure(task: TaskInfo, node: NodeInfo, options: PredicateOptions) -> str | None:
    """The first static filter `node` fails for `task`, as kube-scheduler words it, or None."""
    if not options.enabled:
        return None
    if node.unschedulable and not _tolerates(
        task.tolerations, {"key": _UNSCHEDULABLE_TAINT, "effect": "NoSchedule"}
    ):
        return NODE_UNSCHEDULABLE
    if options.node_affinity and not matches_node_affinity(task, node):
        return NODE_AFFINITY
    if options.taint_toleration:
        for taint in node.taints:
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(task.tolerations, taint):
                key, value = taint.get("key"), taint.get("value", "")
                return f"node(s) had untolerated taint {{{key}: {value}}}"
    if task.volume_needs:
        failure = volume_failure(task.volume_needs, lambda term: _node_term_matches(term, node))
        if failure is not None:
            return failure
    if task.device_claims and not node_can_ever(task.device_claims, node.name):
        return CANNOT_ALLOCATE
    return None


def matches_node_affinity(task: TaskInfo, node: NodeInfo) -> bool:
    for key, value in task.node_selector.items():
        if node.labels.get(key) != value:
            return False
    required = _get(task.affinity, "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    terms = required.get("nodeSelectorTerms") or []
    return any(_node_term_matches(term, node) for term in terms)


def preferred_affinity_weight(task: TaskInfo, node: NodeInfo) -> tuple[int, int]:
    """(matched weight, total weight) of the task's preferred node-affinity terms on `node`."""
    preferred = _get(task.affinity, "nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution")
    matched = total = 0
    for entry in preferred or []:
        weight = int(entry.get("weight", 0))
        total += weight
        if _node_term_matches(entry.get("preference") or {}, node):
            matched += weight
    return matched, total


def untolerated_soft_taints(task: TaskInfo, node: NodeInfo) -> int:
    return sum(
        1
        for taint in node.taints
        if taint.get("effect") == "PreferNoSchedule" and not _tolerates(task.tolerations, taint)
    )


def has_pod_affinity(task: TaskInfo) -> bool:
    return bool(
        _get(task.affinity, "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
        or _get(task.affinity, "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    )


def anti_affinity_terms(affinity: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    return list(_get(affinity, "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution") or [])


@dataclass(frozen=True, slots=True)
class PlacedPod:
    node: int
    namespace: str
    labels: Mapping[str, str]
    anti_affinity: tuple[Mapping[str, Any], ...] = ()


class PodAffinityCheck:
    """Required inter-pod (anti-)affinity for one task against the pods placed right now.

    Built once per placement attempt: it turns every term into the set of topology domains
    (values of the term's topologyKey label) that hold a matching pod, so each node costs a
    few set look-ups.
    """

    def __init__(self, task: TaskInfo, nodes: Sequence[NodeInfo], pods: Iterable[PlacedPod]):
        self._nodes = nodes
        affinity = _get(task.affinity, "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
        self._affinity = [(t, set[str]()) for t in affinity or []]
        self._anti = [(t, set[str]()) for t in anti_affinity_terms(task.affinity)]
        self._existing_anti: list[tuple[str, str]] = []  # (topologyKey, domain) the task must avoid
        any_match = [False] * len(self._affinity)
        for pod in pods:
            labels = nodes[pod.node].labels
            for index, (term, domains) in enumerate(self._affinity):
                if _pod_term_matches(term, pod.namespace, pod.labels, task.namespace):
                    any_match[index] = True
                    _add_domain(domains, labels, term)
            for term, domains in self._anti:
                if _pod_term_matches(term, pod.namespace, pod.labels, task.namespace):
                    _add_domain(domains, labels, term)
            for term in pod.anti_affinity:
                if _pod_term_matches(term, task.namespace, task.labels, pod.namespace):
                    key = str(term.get("topologyKey", ""))
                    if key in labels:
                        self._existing_anti.append((key, labels[key]))
        # kube-scheduler lets the first pod of a group that selects itself go anywhere.
        self._self_affine = [
            not any_match[i] and _pod_term_matches(t, task.namespace, task.labels, task.namespace)
            for i, (t, _) in enumerate(self._affinity)
        ]

    def failure(self, node: int) -> str | None:
        labels = self._nodes[node].labels
        for index, (term, domains) in enumerate(self._affinity):
            key = str(term.get("topologyKey", ""))
            if labels.get(key) not in domains and not self._self_affine[index]:
                return POD_AFFINITY
        for term, domains in self._anti:
            key = str(term.get("topologyKey", ""))
            if key in labels and labels[key] in domains:
                return POD_ANTI_AFFINITY
        for key, domain in self._existing_anti:
            if labels.get(key) == domain:
                return EXISTING_ANTI_AFFINITY
        return None


def _add_domain(domains: set[str], labels: Mapping[str, str], term: Mapping[str, Any]) -> None:
    key = str(term.get("topologyKey", ""))
    if key in labels:
        domains.add(labels[key])


def _pod_term_matches(
    term: Mapping[str, Any], namespace: str, labels: Mapping[str, str], owner_namespace: str
) -> bool:
    namespaces = term.get("namespaces") or [owner_namespace]
    if namespace not in namespaces:
        return False
    return label_selector_matches(term.get("labelSelector"), labels)


def label_selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A Kubernetes LabelSelector; a missing selector matches nothing, as in pod affinity terms."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    return all(_expression_matches(e, labels) for e in selector.get("matchExpressions") or [])


def _node_term_matches(term: Mapping[str, Any], node: NodeInfo) -> bool:
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False  # an empty term matches no node
    if not all(_expression_matches(e, node.labels) for e in expressions):
        return False
    return all(_expression_matches(f, {"metadata.name": node.name}) for f in fields)


def _expression_matches(expression: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = expression.get("key", ""), expression.get("operator", "In")
    values = [str(v) for v in expression.get("values") or []]
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt") and present and values:
        try:
            actual, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return actual > bound if operator == "Gt" else actual < bound
    return False


def _tolerates(tolerations: Iterable[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    for toleration in tolerations:
        effect = toleration.get("effect") or ""
        if effect and effect != taint.get("effect"):
            continue
        key = toleration.get("key") or ""
        if toleration.get("operator") == "Exists":
            if not key or key == taint.get("key"):
                return True
        elif key == taint.get("key") and (toleration.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def _get(affinity: Mapping[str, Any] | None, kind: str, field: str) -> Any:
    if not affinity:
        return None
    section = affinity.get(kind) or {}
    return section.get(field)
