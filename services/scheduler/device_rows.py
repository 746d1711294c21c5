"""Pure: DeviceClasses, ResourceClaims and ResourceSlices as the scheduler keeps them, and back
into what the core's device allocator reads (services/scheduler/core/devices.py).

`projection.project` stores `device_fields(kind, obj)` in the `device_objects` row keyed
`device_key`. Once per cycle (and only when some pod has claims) the snapshot reader turns the
live rows into a `DeviceView`, which answers, for a pod's claims (the `deviceClaims` its row's
placement holds, pod_fields.py):
- `claim_needs`: each claim's requests with the devices its class's and its own CEL selectors
  admit, by node; or the node it is allocated on and the devices it holds; or why it cannot be
  allocated (the claim or its class does not exist, a selector does not compile);
- `quota`: the queue resources its devices count as: per request, its count of devices (an All
  request counts what it was given, or one before that), named by the class's
  `spec.extendedResourceName` or else `deviceclass.resource.kubernetes.io/<class>`, as Kubernetes
  names a class's implicit extended resource and Volcano v1.15's `queue.spec.dra` counts;
- `node_resources`: how many devices of each class a node has, added to its allocatable so that
  the same names fit and are shared like any other resource;
- `taken`: the devices allocated to claims.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from services.scheduler.core.device_selectors import compile_problem
from services.scheduler.core.devices import (
    CLASS_RESOURCE_PREFIX,
    ClaimNeed,
    DeviceClassInfo,
    DeviceInfo,
    DeviceRef,
    DeviceRequest,
    matching_devices,
)
from shared.domain.quantity import QuantityError, to_milli

DEVICE_KINDS = ("DeviceClass", "ResourceClaim", "ResourceSlice")
MATCHES_KEPT = 50_000  # (selector set, slice version) entries kept across views before a fresh start
SliceVersion = tuple[str, int]  # a ResourceSlice row's key and resourceVersion


def device_key(kind: str, namespace: str, name: str) -> str:
    return f"{kind}/{namespace}/{name}"


def _expressions(selectors: Any) -> list[str]:
    return [
        str((s.get("cel") or {}).get("expression") or "")
        for s in selectors or ()
        if isinstance(s, Mapping) and (s.get("cel") or {}).get("expression")
    ]


def _attribute(value: Any) -> Any:
    if isinstance(value, Mapping):
        for kind in ("string", "int", "bool", "version"):
            if kind in value:
                return value[kind]
    return value


def _amount(value: Any) -> int:
    text = value.get("value") if isinstance(value, Mapping) else value
    try:
        return to_milli(str(text))
    except QuantityError:
        return 0


def _count(value: Any, default: int = 1) -> int:
    """A device count as the API server would have validated it; anything else is `default`
    (the simulator and old servers store what they are given, and no object stops ingest)."""
    if isinstance(value, bool):
        return default
    try:
        return max(0, int(value)) if value is not None else default
    except (TypeError, ValueError):
        return default


def _qualified(name: str, driver: str) -> str:
    return name if "/" in name else f"{driver}/{name}"


def device_fields(kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    """What the allocator reads of the object; {"unreadable": why} for a shape the API server
    would have refused (no object stops ingest: a claim so kept is never allocated, a class admits
    no device, a slice offers none)."""
    try:
        return _fields(kind, obj)
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        return {"unreadable": f"{type(error).__name__}: {error}"}


def _fields(kind: str, obj: Mapping[str, Any]) -> dict[str, Any]:
    spec = obj.get("spec") or {}
    if kind == "DeviceClass":
        return {
            "selectors": _expressions(spec.get("selectors")),
            "extendedResourceName": spec.get("extendedResourceName") or "",
        }
    if kind == "ResourceClaim":
        requests = []
        for request in (spec.get("devices") or {}).get("requests") or ():
            exactly = request.get("exactly") or {}
            requests.append(
                {
                    "name": request.get("name") or "",
                    "deviceClassName": exactly.get("deviceClassName") or "",
                    "selectors": _expressions(exactly.get("selectors")),
                    "count": _count(exactly.get("count")),
                    "all": exactly.get("allocationMode") == "All",
                    "firstAvailable": bool(request.get("firstAvailable")),
                }
            )
        allocation = (obj.get("status") or {}).get("allocation")
        results = ((allocation or {}).get("devices") or {}).get("results") if allocation else None
        return {
            "requests": requests,
            "allocated": None
            if allocation is None
            else [[r.get("request"), r.get("driver"), r.get("pool"), r.get("device")] for r in results or ()],
        }
    driver = str(spec.get("driver") or "")
    return {
        "driver": driver,
        "pool": str((spec.get("pool") or {}).get("name") or ""),
        "node": str(spec.get("nodeName") or ""),
        "devices": [
            {
                "name": str(device.get("name") or ""),
                "attributes": {
                    _qualified(k, driver): _attribute(v) for k, v in (device.get("attributes") or {}).items()
                },
                "capacity": {
                    _qualified(k, driver): _amount(v) for k, v in (device.get("capacity") or {}).items()
                },
            }
            for device in spec.get("devices") or ()
            if isinstance(device, Mapping)
        ],
    }


@dataclass
class DeviceView:
    classes: Mapping[str, DeviceClassInfo]
    claims: Mapping[tuple[str, str], Mapping[str, Any]]
    devices: tuple[DeviceInfo, ...]
    taken: frozenset[DeviceRef]
    node_of: Mapping[DeviceRef, str]
    # Each slice's devices with the slice's identity (key, resourceVersion), and what selectors
    # admitted of each slice version: kept across views (a claim's allocation changes the view,
    # not the slices), so CEL runs once per selector set and slice version.
    slices: tuple[tuple[SliceVersion, tuple[DeviceInfo, ...]], ...] = ()
    shared: dict[Any, dict[str, tuple[DeviceRef, ...]]] = field(default_factory=dict)
    _matches: dict[tuple[str, ...], dict[str, tuple[DeviceRef, ...]]] = field(default_factory=dict)

    def candidates(self, expressions: Sequence[str]) -> dict[str, tuple[DeviceRef, ...]]:
        key = tuple(expressions)
        found = self._matches.get(key)
        if found is None:
            if len(self.shared) > MATCHES_KEPT:
                self.shared.clear()
            merged: dict[str, list[DeviceRef]] = {}
            for version, devices in self.slices:
                admitted = self.shared.get((key, version))
                if admitted is None:
                    admitted = self.shared[(key, version)] = matching_devices(devices, key)
                for node, refs in admitted.items():
                    merged.setdefault(node, []).extend(refs)
            found = self._matches[key] = {node: tuple(sorted(refs)) for node, refs in merged.items()}
        return found

    def claim_needs(self, namespace: str, names: Iterable[tuple[str, str | None]]) -> tuple[ClaimNeed, ...]:
        """`names`: (name in the pod, ResourceClaim name or None while it is not generated yet)."""
        return tuple(self._need(namespace, pod_name, claim) for pod_name, claim in names)

    def _need(self, namespace: str, pod_name: str, claim_name: str | None) -> ClaimNeed:
        if claim_name is None:
            return ClaimNeed(namespace, pod_name, waiting=True)
        fields = self.claims.get((namespace, claim_name))
        if fields is None:
            return ClaimNeed(
                namespace, claim_name, problem=f'resourceclaim "{namespace}/{claim_name}" not found'
            )
        if fields.get("unreadable"):
            unreadable = f'resourceclaim "{namespace}/{claim_name}" cannot be read: {fields["unreadable"]}'
            return ClaimNeed(namespace, claim_name, problem=unreadable)
        allocated = fields.get("allocated")
        if allocated is not None:
            held = tuple((str(d), str(p), str(n)) for _, d, p, n in allocated)
            nodes = {self.node_of.get(ref, "") for ref in held}
            return ClaimNeed(
                namespace, claim_name, allocated_node=next(iter(nodes)) if len(nodes) == 1 else "", held=held
            )
        requests = []
        for request in fields.get("requests") or ():
            class_name = str(request["deviceClassName"])
            device_class = self.classes.get(class_name)
            problem = ""
            if request.get("firstAvailable"):
                problem = f'request "{request["name"]}" uses firstAvailable, which Phalanx does not allocate'
            elif device_class is None:
                problem = f'device class "{class_name}" does not exist'
            expressions = [*(device_class.selectors if device_class else ()), *request.get("selectors", ())]
            broken = next((p for e in expressions if (p := compile_problem(e))), None)
            problem = problem or broken or ""
            if problem:
                return ClaimNeed(
                    namespace, claim_name, problem=f'resourceclaim "{namespace}/{claim_name}": {problem}'
                )
            requests.append(
                DeviceRequest(
                    str(request["name"]),
                    class_name,
                    int(request.get("count") or 1),
                    bool(request.get("all")),
                    self.candidates(expressions),
                )
            )
        return ClaimNeed(namespace, claim_name, tuple(requests))

    def quota(self, namespace: str, names: Iterable[tuple[str, str | None]]) -> dict[str, int]:
        """The queue resources the pod's devices count as, in milli-units."""
        counted: dict[str, int] = {}
        for _, claim_name in names:
            fields = self.claims.get((namespace, claim_name)) if claim_name else None
            if fields is None:
                continue
            given: dict[str, int] = {}
            for result in fields.get("allocated") or ():
                given[str(result[0])] = given.get(str(result[0]), 0) + 1
            for request in fields.get("requests") or ():
                class_name = str(request["deviceClassName"])
                info = self.classes.get(class_name) or DeviceClassInfo(class_name)
                devices = given.get(request["name"]) or (
                    1 if request.get("all") else int(request.get("count") or 1)
                )
                counted[info.quota_resource] = counted.get(info.quota_resource, 0) + devices * 1000
        return counted

    def node_resources(self, node: str) -> dict[str, int]:
        """How many devices of each class the node has, in milli-units, by the class's resource."""
        counted: dict[str, int] = {}
        for info in self.classes.values():
            if compile_problem_free(info.selectors):
                devices = len(self.candidates(info.selectors).get(node, ()))
                if devices:
                    counted[info.quota_resource] = counted.get(info.quota_resource, 0) + devices * 1000
        return counted


def compile_problem_free(expressions: Sequence[str]) -> bool:
    return all(compile_problem(e) is None for e in expressions)


def device_view(rows: Iterable[Any], shared: dict[Any, Any] | None = None) -> DeviceView:
    """From live `device_objects` rows (anything with `.key`, `.kind`, `.fields` and
    `.resource_version`); `shared` keeps what selectors admitted of each slice version."""
    classes: dict[str, DeviceClassInfo] = {}
    claims: dict[tuple[str, str], Mapping[str, Any]] = {}
    devices: list[DeviceInfo] = []
    slices: list[tuple[SliceVersion, tuple[DeviceInfo, ...]]] = []
    for row in rows:
        _, namespace, name = str(row.key).split("/", 2)
        fields = row.fields or {}
        if row.kind == "DeviceClass":
            selectors = ("false",) if fields.get("unreadable") else tuple(fields.get("selectors") or ())
            classes[name] = DeviceClassInfo(name, selectors, str(fields.get("extendedResourceName") or ""))
        elif row.kind == "ResourceClaim":
            claims[(namespace, name)] = fields
        elif row.kind == "ResourceSlice" and fields.get("node"):
            published = tuple(
                DeviceInfo(
                    str(fields["driver"]),
                    str(fields["pool"]),
                    str(device["name"]),
                    str(fields["node"]),
                    dict(device.get("attributes") or {}),
                    {k: int(v) for k, v in (device.get("capacity") or {}).items()},
                )
                for device in fields.get("devices") or ()
            )
            devices.extend(published)
            slices.append(((str(row.key), int(getattr(row, "resource_version", 0) or 0)), published))
    devices.sort(key=lambda d: (d.node, d.ref))
    slices.sort(key=lambda entry: entry[0])
    taken = frozenset(
        (str(d), str(p), str(n)) for fields in claims.values() for _, d, p, n in fields.get("allocated") or ()
    )
    node_of = {d.ref: d.node for d in devices}
    return DeviceView(
        classes, claims, tuple(devices), taken, node_of, tuple(slices), {} if shared is None else shared
    )


def pod_claims(pod: Mapping[str, Any]) -> list[list[str | None]]:
    """[name in the pod, ResourceClaim name or None] for each of spec.resourceClaims: a named claim
    as given, a template's claim as status.resourceClaimStatuses records it once generated."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    generated = {
        s.get("name"): s.get("resourceClaimName")
        for s in status.get("resourceClaimStatuses") or ()
        if isinstance(s, Mapping)
    }
    found: list[list[str | None]] = []
    for entry in spec.get("resourceClaims") or ():
        if not isinstance(entry, Mapping) or not entry.get("name"):
            continue
        name = str(entry["name"])
        if entry.get("resourceClaimName"):
            found.append([name, str(entry["resourceClaimName"])])
        else:
            claim = generated.get(name)
            found.append([name, str(claim) if claim else None])
    return found


def with_dra_quota(
    amounts: dict[str, int] | None, spec: Mapping[str, Any], part: str
) -> dict[str, int] | None:
    """A queue's capability, guarantee or deserved with Volcano v1.15's `spec.dra.<part>` added:
    `{<device class>: {count: N}}` counts as N of the class's resource (CLASS_RESOURCE_PREFIX)."""
    section = ((spec.get("dra") or {}).get(part) or {}) if isinstance(spec.get("dra"), Mapping) else {}
    if not isinstance(section, Mapping) or not section:
        return amounts
    merged = dict(amounts or {})
    for class_name, limit in section.items():
        count = limit.get("count") if isinstance(limit, Mapping) else None
        if count is not None:
            merged[CLASS_RESOURCE_PREFIX + str(class_name)] = _count(count, 0) * 1000
    return merged
