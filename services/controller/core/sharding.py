"""Pure: which shard of the controller's work an object belongs to, and how the shards are shared
out among the live replicas.

Every object of one job (the Job, its pods, its PodGroup, the scheduler's decisions about that
PodGroup, Commands aimed at it) has the same *job key*, read from the object itself: the Job's
name, or the owning Job's name from a controller ownerReference. Work that no Volcano Job owns is
keyed by the PodGroup it is (or will be) grouped in, and cluster-wide work (Queues, queue
Commands, PriorityClasses) by one fixed key. A key maps to one of a fixed number of shards by a
stable hash, so every replica computes the same answer with no shared state.

`plan_shards` is the balancing rule each replica applies to what it reads from the lease table:
keep up to its fair part, take free (or expired) shards up to it, give back what is above it.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Set
from dataclasses import dataclass
from typing import Any

from services.controller.core.podgroups import PODGROUP_PREFIX, WORKLOAD_KINDS
from shared.volcano.keys import GROUP_NAME as GROUP_ANNOTATION
from shared.volcano.objects import KubeObject

Json = Mapping[str, Any]
JobKey = tuple[str, str]  # (namespace, name of the Job, or of the PodGroup for other work)
CLUSTER_KEY: JobKey = ("", "cluster-scoped")


def shard_of(key: JobKey, shards: int) -> int:
    """A stable hash (CRC-32 of "namespace/name"), the same in every replica and every run."""
    namespace, name = key
    return zlib.crc32(f"{namespace}/{name}".encode()) % shards


def job_key(kind: str, obj: Json) -> JobKey:
    """The key of the work an object of `kind` belongs to; see the module docstring."""
    view = KubeObject(obj)
    namespace = str(view.namespace)
    if kind == "Job":
        return (namespace, str(view.name))
    if kind == "Command":
        target = obj.get("target") or {}
        if target.get("kind") == "Job":
            return (namespace, str(target.get("name", "")))
        return CLUSTER_KEY
    owner = view.controller_ref or {}
    if kind in ("Pod", "PodGroup") and owner.get("kind") == "Job":
        return (namespace, str(owner.get("name", "")))
    if kind == "PodGroup":
        return (namespace, str(view.name))
    if kind == "Pod":
        group = view.annotations.get(GROUP_ANNOTATION)
        if group:
            return (namespace, str(group))
        # Not grouped yet: the PodGroup the controller gives it (core/podgroups.py) is named so.
        uid = owner.get("uid") if owner else view.uid
        return (namespace, f"{PODGROUP_PREFIX}{uid}")
    if kind in WORKLOAD_KINDS:
        return (namespace, f"{PODGROUP_PREFIX}{view.uid}")
    return CLUSTER_KEY


def decision_key(namespace: str, podgroup: Json | None, podgroup_name: str) -> JobKey:
    """The key of a scheduler decision about a PodGroup: its Job's, when the PodGroup is known."""
    if podgroup is not None:
        return job_key("PodGroup", podgroup)
    return (namespace, podgroup_name)


@dataclass(frozen=True)
class ShardRow:
    shard: int
    holder: str
    expired: bool


@dataclass(frozen=True)
class ShardPlan:
    take: frozenset[int]  # free or expired shards to acquire now
    give_back: frozenset[int]  # shards held above the fair part, to release after stopping work


def fair_share(shards: int, members: int, rank: int) -> int:
    """How many shards the member of this rank (0-based, by holder name) should hold: an even
    split, the first `shards % members` members taking one more."""
    members = max(members, 1)
    return shards // members + (1 if rank < shards % members else 0)


def plan_shards(rows: list[ShardRow], me: str, live_members: Set[str]) -> ShardPlan:
    """What this replica does at one renewal, given every shard row and the live members."""
    members = sorted(live_members | {me})
    target = fair_share(len(rows), len(members), members.index(me))
    mine = sorted(r.shard for r in rows if r.holder == me and not r.expired)
    if len(mine) > target:
        # The highest-numbered first, so that every replica gives back the same ones each time.
        return ShardPlan(frozenset(), frozenset(mine[target:]))
    free = sorted(r.shard for r in rows if r.expired)
    return ShardPlan(frozenset(free[: target - len(mine)]), frozenset())


def holders(rows: list[ShardRow]) -> Mapping[str, int]:
    """How many unexpired shards each holder has (for the status line and tests)."""
    counts: dict[str, int] = {}
    for row in rows:
        if not row.expired:
            counts[row.holder] = counts.get(row.holder, 0) + 1
    return counts
