"""Pure: Volcano's HyperNodes (topology.volcano.sh/v1alpha1) as plain data, and the nodes under each.

A HyperNode is a network performance domain (a switch and what hangs under it) of a `tier`. Its
`spec.members[]` are nodes or lower HyperNodes, each chosen by one selector: `exactMatch` (a
name), `regexMatch` (a pattern, searched unanchored as Go's regexp.MatchString does) or, for
nodes, `labelMatch` (a label selector). `resolve_node_sets` gives every HyperNode the set of
nodes under it, through nested members; a member naming nothing that exists, a pattern that does
not compile, or a cycle between HyperNodes contributes no nodes. The scheduler resolves its
domains with it once per cycle; the controller counts `status.nodeCount` with it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

API_VERSION = "topology.volcano.sh/v1alpha1"


@dataclass(frozen=True, slots=True)
class HyperNodeMember:
    """One `spec.members[]` entry: `type` Node or HyperNode and exactly one selector."""

    type: str = "Node"
    exact: str | None = None
    regex: str | None = None
    labels: Mapping[str, Any] | None = None  # a LabelSelector (labelMatch)


@dataclass(frozen=True, slots=True)
class HyperNodeInfo:
    name: str
    tier: int
    tier_name: str = ""
    members: tuple[HyperNodeMember, ...] = ()


def parse_members(raw_members: Any) -> tuple[HyperNodeMember, ...]:
    """`spec.members` as written; a selector with several kinds keeps the first, as admission
    refuses such members anyway."""
    members = []
    for raw in raw_members if isinstance(raw_members, list) else ():
        if not isinstance(raw, Mapping):
            continue
        selector = raw.get("selector")
        if not isinstance(selector, Mapping):
            selector = {}
        exact, regex, labels = (
            selector.get("exactMatch"),
            selector.get("regexMatch"),
            selector.get("labelMatch"),
        )
        member = HyperNodeMember(type=str(raw.get("type") or "Node"))
        if isinstance(exact, Mapping):
            member = HyperNodeMember(member.type, exact=str(exact.get("name") or ""))
        elif isinstance(regex, Mapping):
            member = HyperNodeMember(member.type, regex=str(regex.get("pattern") or ""))
        elif isinstance(labels, Mapping):
            member = HyperNodeMember(member.type, labels=labels)
        members.append(member)
    return tuple(members)


def parse_hyper_node(obj: Mapping[str, Any]) -> HyperNodeInfo:
    """A HyperNode object (as the API serves it) as plain data."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        spec = {}
    tier = spec.get("tier")
    return HyperNodeInfo(
        name=str((obj.get("metadata") or {}).get("name") or ""),
        tier=tier if isinstance(tier, int) and not isinstance(tier, bool) else 0,
        tier_name=str(spec.get("tierName") or ""),
        members=parse_members(spec.get("members")),
    )


def _names(member: HyperNodeMember, names: Sequence[str]) -> list[str]:
    if member.exact is not None:
        return [member.exact]
    if member.regex:
        try:
            pattern = re.compile(member.regex)
        except re.error:
            return []
        return [name for name in names if pattern.search(name)]
    return []


def selects(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """A Kubernetes LabelSelector over `labels` (an empty selector selects everything)."""
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or ():
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = [str(v) for v in expression.get("values") or ()]
        present = key in labels
        matched = {
            "In": present and labels.get(key) in values,
            "NotIn": not present or labels.get(key) not in values,
            "Exists": present,
            "DoesNotExist": not present,
        }.get(operator, False)
        if not matched:
            return False
    return True


def resolve_node_sets(
    hyper_nodes: Sequence[HyperNodeInfo], node_names: Sequence[str], node_labels: Sequence[Mapping[str, str]]
) -> dict[str, frozenset[int]]:
    """HyperNode name -> indices (into `node_names`) of the nodes under it."""
    by_name = {h.name: h for h in hyper_nodes}
    index_of = {name: i for i, name in enumerate(node_names)}
    hyper_names = sorted(by_name)
    resolved: dict[str, frozenset[int]] = {}
    visiting: set[str] = set()

    def nodes_of(name: str) -> frozenset[int]:
        done = resolved.get(name)
        if done is not None:
            return done
        if name in visiting or name not in by_name:
            return frozenset()  # a cycle, or a member that does not exist
        visiting.add(name)
        found: set[int] = set()
        for member in by_name[name].members:
            if member.type == "HyperNode":
                for child in _names(member, hyper_names):
                    found |= nodes_of(child)
            elif member.labels is not None:
                found.update(i for i, labels in enumerate(node_labels) if selects(member.labels, labels))
            else:
                found.update(index_of[n] for n in _names(member, node_names) if n in index_of)
        visiting.discard(name)
        resolved[name] = frozenset(found)
        return resolved[name]

    return {name: nodes_of(name) for name in hyper_names}
