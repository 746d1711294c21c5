"""Pure: the VolumeBinding filter of the `predicates` plugin, for pods that mount claims.

The snapshot reader calls `volume_needs` for each task whose pod mounts PersistentVolumeClaims,
with the claims, volumes and StorageClasses the cluster holds, and puts the result on the task
(`TaskInfo.volume_needs`); `static_failure` then asks `volume_failure` per node. So a need is a
static filter: it depends on the task and the node only, never on where other pods are.

As kube-scheduler's VolumeBinding plugin decides:
- a claim bound to a volume with node affinity: only nodes that affinity admits ("node(s) had
  volume node affinity conflict");
- an unbound claim whose class binds WaitForFirstConsumer: only nodes where some Available volume
  of its class would match it ("node(s) didn't find available persistent volumes to bind");
- an unbound claim that binds Immediately: the PV controller binds it, the pod waits on every
  node ("pod has unbound immediate PersistentVolumeClaims"); a missing claim likewise.
Each task's needs are judged alone: two pending pods of one cycle may both count on the same
Available volume (docs/differences.md); the simulator's binder then binds one of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

VOLUME_NODE_CONFLICT = "node(s) had volume node affinity conflict"
NO_VOLUME_TO_BIND = "node(s) didn't find available persistent volumes to bind"
UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"

NodeTerms = tuple[Mapping[str, Any], ...]  # a volume's required nodeSelectorTerms (any may match)


@dataclass(frozen=True, slots=True)
class ClaimInfo:
    namespace: str
    name: str
    storage_class: str = ""
    volume_name: str = ""  # set once bound
    access_modes: frozenset[str] = frozenset()
    request: int = 0  # storage, milli-units as `Resources` counts them
    volume_mode: str = "Filesystem"


@dataclass(frozen=True, slots=True)
class VolumeInfo:
    name: str
    storage_class: str = ""
    capacity: int = 0
    access_modes: frozenset[str] = frozenset()
    volume_mode: str = "Filesystem"
    claimed_by: tuple[str, str] | None = None  # (namespace, name) of spec.claimRef
    node_terms: NodeTerms | None = None  # None: every node can reach it


@dataclass(frozen=True, slots=True)
class VolumeNeed:
    """One claim's demand on the node: it passes if any of `choices` admits it (a choice of None
    admits every node); no choices fails every node with `reason`."""

    reason: str
    choices: tuple[NodeTerms | None, ...] = field(default_factory=tuple)


def volume_needs(
    namespace: str,
    claim_names: Sequence[str],
    claims: Mapping[tuple[str, str], ClaimInfo],
    volumes: Sequence[VolumeInfo],
    binding_modes: Mapping[str, str],
) -> tuple[VolumeNeed, ...]:
    """What the pod's claims ask of a node; () when they ask nothing."""
    by_name = {volume.name: volume for volume in volumes}
    needs: list[VolumeNeed] = []
    for name in claim_names:
        claim = claims.get((namespace, name))
        if claim is None:
            needs.append(VolumeNeed(f'persistentvolumeclaim "{name}" not found'))
        elif claim.volume_name:
            bound = by_name.get(claim.volume_name)
            if bound is not None and bound.node_terms is not None:
                needs.append(VolumeNeed(VOLUME_NODE_CONFLICT, (bound.node_terms,)))
        elif binding_modes.get(claim.storage_class) == WAIT_FOR_FIRST_CONSUMER:
            choices = tuple(v.node_terms for v in volumes if matches(claim, v))
            if None not in choices:  # a volume every node reaches asks nothing of the node
                needs.append(VolumeNeed(NO_VOLUME_TO_BIND, choices))
        else:
            needs.append(VolumeNeed(UNBOUND_IMMEDIATE))
    return tuple(needs)


def matches(claim: ClaimInfo, volume: VolumeInfo) -> bool:
    """The volume is free (or promised to the claim) and satisfies its class, modes and size."""
    free = volume.claimed_by in (None, (claim.namespace, claim.name))
    return (
        free
        and volume.storage_class == claim.storage_class
        and claim.access_modes <= volume.access_modes
        and volume.volume_mode == claim.volume_mode
        and volume.capacity >= claim.request
    )


def volume_failure(
    needs: Sequence[VolumeNeed], node_matches: Callable[[Mapping[str, Any]], bool]
) -> str | None:
    """The first need the node fails, as kube-scheduler words it; `node_matches(term)` says
    whether one nodeSelectorTerm holds for the node."""
    for need in needs:
        if not any(choice is None or any(node_matches(t) for t in choice) for choice in need.choices):
            return need.reason
    return None
