"""Pure: allocating DRA devices for a pod's ResourceClaims on one node, in the same decision that
places the pod.

The snapshot reader resolves each pod's claims into `ClaimNeed`s (`claim_need` here: each request
with the devices of the cluster that its DeviceClass's and its own CEL selectors admit, grouped by
node) and puts them on the task (`TaskInfo.device_claims`). The cycle's state keeps the devices
taken (allocated in the cluster, decided by a pending decision, or given to a task earlier in this
cycle); placement asks `allocate` per candidate node and books what it returns, so a gang's
trial holds its devices until the gang is committed or rolled back: a gang is placed only where
all its claims can be allocated together.

As kube-scheduler's structured allocator: an ExactCount request takes `count` devices (default
1) and an All request every matching device of the node (at least one); a device serves one
request of one claim; a claim already allocated ties the pod to its node. It differs in that
requests are served in order, each taking the first free devices that match, with no
backtracking between requests whose selectors overlap (docs/devices.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from services.scheduler.core.device_selectors import device_activation, matches

DeviceRef = tuple[str, str, str]  # (driver, pool, device): a device's name in the cluster
CANNOT_ALLOCATE = "cannot allocate all claims"  # kube-scheduler's per-node reason
DEVICE_CLAIM_UNSATISFIABLE = "DeviceClaimUnsatisfiable"  # the gang's structured reason
# The resource a device class is counted as, where its DeviceClass names no extendedResourceName
# (Kubernetes' implicit extended resource name of a class; Volcano's `queue.spec.dra` counts as it).
CLASS_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"


@dataclass(frozen=True, slots=True)
class DeviceInfo:
    """One device of a ResourceSlice; attribute and capacity names are qualified ("domain/name")."""

    driver: str
    pool: str
    name: str
    node: str
    attributes: Mapping[str, Any] = field(default_factory=dict)
    capacity: Mapping[str, int] = field(default_factory=dict)  # milli-units, as quantities

    @property
    def ref(self) -> DeviceRef:
        return (self.driver, self.pool, self.name)


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """One request of a claim (spec.devices.requests[].exactly) with the devices it may take."""

    name: str
    device_class: str
    count: int = 1
    all_devices: bool = False  # allocationMode: All
    candidates: Mapping[str, tuple[DeviceRef, ...]] = field(default_factory=dict)  # node -> devices


@dataclass(frozen=True, slots=True)
class DeviceResult:
    """One allocated device, as a claim's status.allocation.devices.results[] names it."""

    claim_namespace: str
    claim_name: str
    request: str
    driver: str
    pool: str
    device: str

    @property
    def ref(self) -> DeviceRef:
        return (self.driver, self.pool, self.device)


@dataclass(frozen=True, slots=True)
class ClaimNeed:
    """A claim of a pending pod: what it requests, or where it is already allocated."""

    namespace: str
    name: str
    requests: tuple[DeviceRequest, ...] = ()
    allocated_node: str | None = None  # allocated already: the pod may go only there ("" anywhere)
    held: tuple[DeviceRef, ...] = ()  # the devices its allocation holds
    problem: str = ""  # why it can never be allocated as it stands (missing claim or class, ...)
    waiting: bool = False  # generated from a template, not created yet: fits nowhere for now


@dataclass(frozen=True, slots=True)
class DeviceClassInfo:
    name: str
    selectors: tuple[str, ...] = ()
    resource: str = ""  # the queue resource its devices count as ("" : the implicit class name)

    @property
    def quota_resource(self) -> str:
        return self.resource or CLASS_RESOURCE_PREFIX + self.name


def matching_devices(
    devices: Iterable[DeviceInfo], expressions: Sequence[str]
) -> dict[str, tuple[DeviceRef, ...]]:
    """The devices every expression admits, by node, each node's in name order. Devices that
    look alike to CEL (same driver, attributes and capacities: a node's identical GPUs) are
    evaluated once."""
    found: dict[str, list[DeviceRef]] = {}
    verdicts: dict[tuple[Any, ...], bool] = {}
    for device in devices:
        attributes, capacity = (
            tuple(sorted(device.attributes.items())),
            tuple(sorted(device.capacity.items())),
        )
        looks = (device.driver, attributes, capacity)
        admitted = verdicts.get(looks)
        if admitted is None:
            activation = device_activation(device.driver, device.attributes, device.capacity)
            admitted = verdicts[looks] = matches(expressions, activation)
        if admitted:
            found.setdefault(device.node, []).append(device.ref)
    return {node: tuple(sorted(refs)) for node, refs in found.items()}


def allocate(
    claims: Sequence[ClaimNeed], node: str, taken: Iterable[DeviceRef] | set[DeviceRef]
) -> tuple[DeviceResult, ...] | None:
    """Devices for all of the pod's claims on `node` that are not `taken`, or None if they do not
    all fit. Claims already allocated take nothing new but must be on this node."""
    used = taken if isinstance(taken, set) else set(taken)
    chosen: list[DeviceResult] = []
    mine: set[DeviceRef] = set()
    for claim in claims:
        if claim.problem or claim.waiting:
            return None
        if claim.allocated_node is not None:
            if claim.allocated_node not in ("", node):
                return None
            continue
        for request in claim.requests:
            free = [d for d in request.candidates.get(node, ()) if d not in used and d not in mine]
            if request.all_devices:
                every = request.candidates.get(node, ())
                if not every or len(free) < len(every):
                    return None
                picked = free
            elif len(free) < request.count:
                return None
            else:
                picked = free[: request.count]
            mine.update(picked)
            chosen.extend(
                DeviceResult(claim.namespace, claim.name, request.name, driver, pool, device)
                for driver, pool, device in picked
            )
    return tuple(chosen)


def node_can_ever(claims: Sequence[ClaimNeed], node: str) -> bool:
    """The claims would fit `node` if none of its devices were taken (a static filter)."""
    return allocate(claims, node, set()) is not None


def never_satisfiable(claims: Sequence[ClaimNeed], nodes: Iterable[str]) -> str | None:
    """Why no node could ever hold these claims, even with every device free; None if one could."""
    names = nodes if isinstance(nodes, set) else set(nodes)
    for claim in claims:
        if claim.problem:
            return claim.problem
        if claim.allocated_node is not None or claim.waiting:
            continue
        for request in claim.requests:
            most = max((len(found) for node, found in request.candidates.items() if node in names), default=0)
            wanted = max(request.count, 1)
            if most < wanted:
                return (
                    f'resourceclaim "{claim.namespace}/{claim.name}" can never be allocated: request '
                    f'"{request.name}" asks for {"all (at least 1)" if request.all_devices else wanted} '
                    f'device(s) of class "{request.device_class}" that its selectors admit, and the most '
                    f"any node has is {most}"
                )
    if any(c.waiting for c in claims):
        return None
    # Only nodes with candidates for some request can hold the pod's new claims.
    hosts = {n for c in claims for r in c.requests for n in r.candidates} or set(names)
    if names and not any(node_can_ever(claims, n) for n in hosts if n in names):
        return "the pod's resourceclaims can never be allocated together on one node"
    return None


def device_counts(
    claims: Sequence[tuple[str, int]], classes: Mapping[str, DeviceClassInfo]
) -> dict[str, int]:
    """The queue resources a pod's device requests count as: (class, devices) pairs summed by the
    resource each class is counted as."""
    counted: dict[str, int] = {}
    for class_name, devices in claims:
        info = classes.get(class_name) or DeviceClassInfo(class_name)
        counted[info.quota_resource] = counted.get(info.quota_resource, 0) + devices
    return counted


def mapping_problem(value: Any) -> str | None:
    """Why a `deviceClassMappings` argument cannot be used, or None."""
    if not isinstance(value, list):
        return "must be a list of {name, deviceClassNames}"
    seen: set[str] = set()
    for entry in value:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str) or not entry["name"]:
            return f"entry {entry!r} needs a resource name in 'name'"
        classes = entry.get("deviceClassNames")
        if not isinstance(classes, list) or not classes or not all(isinstance(c, str) and c for c in classes):
            return f"entry {entry['name']!r} needs a non-empty list of class names in 'deviceClassNames'"
        for class_name in classes:
            if class_name in seen:
                return f"device class {class_name!r} is mapped twice"
            seen.add(class_name)
    return None
