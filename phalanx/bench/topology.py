"""The network-topology scenarios of issue #26: a three-tier cluster, a mix of constrained and
unconstrained gangs, and what the placement looks like at the end.

The cluster's nodes are split in name order into leaves of `leaf` nodes (tier-1 HyperNodes),
`leaves_per_spine` leaves per spine (tier 2) and one root over the spines (tier 3). Job `i` of
the load is hard-constrained to tier 1 when i % 3 == 0, soft (tier 1) when i % 3 == 1, and
unconstrained otherwise (`mode_of`), unless the scenario is the flat control, whose Jobs carry
no constraint. After the run the pods are listed and judged: every hard gang must sit inside one
leaf; for the others the lowest tier whose one HyperNode holds all their pods is counted (a
histogram); fragmentation is the number of leaves with both used and free nodes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from shared.domain.quantity import to_milli
from shared.volcano.keys import JOB_NAME

HARD, SOFT, PLAIN = "hard", "soft", "none"
API = "/apis/topology.volcano.sh/v1alpha1/hypernodes"


@dataclass(frozen=True)
class TopologyLoad:
    leaf: int = 16  # nodes per tier-1 HyperNode
    leaves_per_spine: int = 16  # tier-1 HyperNodes per tier-2 one
    constrained: bool = True  # False: the same Jobs without networkTopology (the control)
    binpack: bool = True  # HyperNode-level bin packing on (the plugin's weights) or off


def mode_of(load: TopologyLoad, index: int) -> str:
    if not load.constrained:
        return PLAIN
    return (HARD, SOFT, PLAIN)[index % 3]


def network_topology(mode: str) -> dict[str, Any] | None:
    if mode == PLAIN:
        return None
    return {"mode": mode, "highestTierAllowed": 1}


def scheduler_conf(base: str, load: TopologyLoad | None) -> str:
    """Volcano's benchmark profile with the network-topology-aware plugin, bin packing on or off
    (the profile unchanged for a scenario without a topology)."""
    if load is None:
        return base
    if load.binpack:
        arguments = "weight: 10, hypernode.binpack.cpu: 5, hypernode.binpack.memory: 1"
    else:
        arguments = "hypernode.binpack.cpu: 0, hypernode.binpack.memory: 0, "
        arguments += "hypernode.binpack.normal-pod.enable: false"
    return base + f"  - name: network-topology-aware\n    arguments: {{{arguments}}}\n"


def _member(kind: str, name: str) -> dict[str, Any]:
    return {"type": kind, "selector": {"exactMatch": {"name": name}}}


def _hyper_node(name: str, tier: int, tier_name: str, members: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "tierName": tier_name, "members": members},
    }


def node_names(count: int) -> list[str]:
    return [f"bench-node-{i}" for i in range(count)]  # as NodeShape.nodes_file_entry names them


async def install(
    create: Callable[[str, dict[str, Any]], Awaitable[bool]], nodes: int, load: TopologyLoad | None
) -> None:
    """The scenario's HyperNodes, created before the load (none for a scenario without them)."""
    for obj in hyper_nodes(node_names(nodes), load) if load is not None else ():
        await create(API, obj)


async def placement(
    session: aiohttp.ClientSession, pods_path: str, nodes: int, jobs: int, load: TopologyLoad | None
) -> TopologyFigures | None:
    """Where the scenario's gangs landed, from the pods and nodes as the API lists them at the end."""
    if load is None:
        return None
    async with session.get(pods_path) as response:
        listed = (await response.json())["items"]
    async with session.get("/api/v1/nodes") as response:
        cpu = {
            n["metadata"]["name"]: to_milli(n["status"]["allocatable"]["cpu"])
            for n in (await response.json())["items"]
        }
    modes = {f"j{i:05d}": mode_of(load, i) for i in range(jobs)}
    return judge(listed, node_names(nodes), load, modes, cpu)


def leaves_of(nodes: list[str], load: TopologyLoad) -> dict[str, list[str]]:
    ordered = sorted(nodes)
    return {f"leaf-{i // load.leaf}": ordered[i : i + load.leaf] for i in range(0, len(ordered), load.leaf)}


def hyper_nodes(nodes: list[str], load: TopologyLoad) -> list[dict[str, Any]]:
    leaves = leaves_of(nodes, load)
    objects = [
        _hyper_node(name, 1, "leaf", [_member("Node", n) for n in members])
        for name, members in leaves.items()
    ]
    names = list(leaves)
    spines = [names[i : i + load.leaves_per_spine] for i in range(0, len(names), load.leaves_per_spine)]
    for index, under in enumerate(spines):
        objects.append(_hyper_node(f"spine-{index}", 2, "spine", [_member("HyperNode", n) for n in under]))
    objects.append(
        _hyper_node("root", 3, "root", [_member("HyperNode", f"spine-{i}") for i in range(len(spines))])
    )
    return objects


@dataclass
class TopologyFigures:
    hard_gangs: int = 0  # hard gangs of the load
    hard_placed: int = 0
    hard_outside_tier: int = 0  # placed hard gangs not inside one leaf: must be 0
    soft_tiers: Counter[int] = field(default_factory=Counter)  # lowest tier holding the gang
    plain_tiers: Counter[int] = field(default_factory=Counter)
    leaves: int = 0
    fragmented_leaves: int = 0  # the measure: leaves with both used and free nodes
    partly_used_leaves: int = 0  # by CPU: some used, some free
    full_leaves: int = 0  # no CPU left
    free_leaves: int = 0  # no pod
    leaves_holding_a_gang: int = 0  # leaves that could still take one more gang of the load's shape


def judge(
    pods: list[Mapping[str, Any]],
    nodes: list[str],
    load: TopologyLoad,
    job_modes: Mapping[str, str],
    node_cpu: Mapping[str, int],
) -> TopologyFigures:
    """`node_cpu`: each node's allocatable CPU (milli); pods are assumed alike, as in the load."""
    leaves = leaves_of(nodes, load)
    leaf_of = {node: leaf for leaf, members in leaves.items() for node in members}
    spine_of = {leaf: index // load.leaves_per_spine for index, leaf in enumerate(leaves)}
    by_job: dict[str, set[str]] = {}
    used: Counter[str] = Counter()  # node -> CPU (milli) its pods request
    pod_cpu, gang = 0, Counter[str]()
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        job = ((pod.get("metadata") or {}).get("labels") or {}).get(JOB_NAME)
        containers = (pod.get("spec") or {}).get("containers") or []
        cpu = sum(to_milli((c.get("resources") or {}).get("requests", {}).get("cpu", 0)) for c in containers)
        pod_cpu = max(pod_cpu, cpu)
        if job:
            gang[job] += 1
        if node and job:
            by_job.setdefault(job, set()).add(node)
            used[node] += cpu
    found = TopologyFigures(leaves=len(leaves), hard_gangs=sum(1 for m in job_modes.values() if m == HARD))
    for job, placed in by_job.items():
        leaves_used = {leaf_of[n] for n in placed if n in leaf_of}
        tier = 1 if len(leaves_used) == 1 else 2 if len({spine_of[x] for x in leaves_used}) == 1 else 3
        mode = job_modes.get(job, PLAIN)
        if mode == HARD:
            found.hard_placed += 1
            found.hard_outside_tier += tier != 1
        elif mode == SOFT:
            found.soft_tiers[tier] += 1
        else:
            found.plain_tiers[tier] += 1
    gang_size = max(gang.values(), default=0)
    for members in leaves.values():
        busy = sum(1 for n in members if used[n])
        free_cpu = sum(node_cpu.get(n, 0) - used[n] for n in members)
        room = sum((node_cpu.get(n, 0) - used[n]) // pod_cpu for n in members) if pod_cpu else 0
        found.fragmented_leaves += 0 < busy < len(members)
        found.free_leaves += busy == 0
        found.full_leaves += free_cpu < max(pod_cpu, 1)
        found.partly_used_leaves += busy > 0 and free_cpu >= max(pod_cpu, 1)
        found.leaves_holding_a_gang += gang_size > 0 and room >= gang_size
    return found


def lines(found: TopologyFigures, load: TopologyLoad) -> list[str]:
    def histogram(counts: Counter[int]) -> str:
        return ", ".join(f"tier {t}: {counts[t]}" for t in (1, 2, 3)) or "none"

    return [
        "",
        "## Topology",
        "",
        f"Leaves of {load.leaf} nodes (tier 1), {load.leaves_per_spine} leaves per spine (tier 2), "
        f"one root (tier 3); Jobs "
        f"{'hard / soft / unconstrained in turn' if load.constrained else 'all unconstrained'}; "
        f"HyperNode bin packing {'on' if load.binpack else 'off'}.",
        "",
        "| figure | value |",
        "|---|---|",
        f"| hard gangs (tier 1): placed / of them outside their tier, of {found.hard_gangs} | "
        f"{found.hard_placed} / {found.hard_outside_tier} |",
        f"| soft gangs by the lowest tier holding them | {histogram(found.soft_tiers)} |",
        f"| unconstrained gangs by the lowest tier holding them | {histogram(found.plain_tiers)} |",
        f"| leaves with both used and free nodes (the issue's fragmentation), of {found.leaves} | "
        f"{found.fragmented_leaves} |",
        f"| leaves by CPU: full / partly used / free | "
        f"{found.full_leaves} / {found.partly_used_leaves} / {found.free_leaves} |",
        f"| leaves that could still take one more gang of the load's size | {found.leaves_holding_a_gang} |",
    ]
