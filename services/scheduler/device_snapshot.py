"""Pure: the DRA part of the snapshot the reader builds (snapshot_reader.py), from the live
`device_objects` rows and the pending bind decisions.

- a task whose pod has ResourceClaims asks, beyond its containers' requests, for the queue
  resources its devices count as (device_rows.DeviceView.quota), so queues limit, guarantee,
  share and reclaim devices by class as they do CPU; a pending task also carries its claims'
  `ClaimNeed`s, and a placed one the devices it holds (released when it is evicted);
- a node offers, beyond its allocatable, the number of devices of each class it has;
- the devices taken are those allocated to claims and those a pending bind decision gave a pod
  whose claims do not show it yet, so nothing is given twice between a decision and its write.
The view is rebuilt only when a DRA row changed; CEL selectors are evaluated once per view.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Protocol

from services.scheduler.core import snapshot as core
from services.scheduler.core.devices import ClaimNeed, DeviceRef
from services.scheduler.device_rows import DeviceView, device_view
from shared.domain.resources import Resources


class _Memory(Protocol):
    def reuse(self, table: str, key: str, version: int, make: Any) -> Any: ...

    def request(self, amounts: Any) -> Resources: ...


@dataclass(frozen=True)
class DeviceSnapshot:
    view: DeviceView
    decided: dict[str, tuple[DeviceRef, ...]]  # pod uid -> devices its pending bind gave it
    taken: frozenset[DeviceRef]

    @classmethod
    def of(cls, rows: Any, decisions: Any, memory: _Memory) -> DeviceSnapshot | None:
        rows = list(rows)
        if not rows:
            return None
        version = hash(tuple(sorted((str(r.key), int(r.resource_version or 0)) for r in rows)))
        # What selectors admitted of each slice version outlives the view (device_rows.DeviceView).
        shared: dict[Any, Any] = memory.reuse("device_objects", "matches", 0, dict)
        view: DeviceView = memory.reuse("device_objects", "", version, lambda: device_view(rows, shared))
        decided = {
            str(d.pod_uid): tuple(
                (str(r["driver"]), str(r["pool"]), str(r["device"]))
                for r in getattr(d, "devices", None) or ()
            )
            for d in decisions
            if d.kind == "bind" and getattr(d, "devices", None)
        }
        taken = view.taken.union(ref for refs in decided.values() for ref in refs)
        return cls(view, decided, taken)

    def task(self, task: core.TaskInfo, pod: Any, memory: _Memory) -> core.TaskInfo:
        names = [(str(n), str(c) if c else None) for n, c in pod.placement["deviceClaims"]]
        quota = self.view.quota(pod.namespace, names)
        request = memory.request(
            {**task.request, **{k: task.request.get(k, 0) + v for k, v in quota.items()}}
        )
        if not pod.node_name and pod.uid not in self.decided:
            return replace(task, request=request, device_claims=self.view.claim_needs(pod.namespace, names))
        held = list(self.decided.get(pod.uid, ()))
        for need in self.view.claim_needs(pod.namespace, names):
            held.extend(need.held)
        claims = (ClaimNeed(pod.namespace, pod.name, allocated_node="", held=tuple(dict.fromkeys(held))),)
        return replace(task, request=request, device_claims=claims)

    def node(self, info: core.NodeInfo) -> core.NodeInfo:
        extra = self.view.node_resources(info.name)
        return replace(info, allocatable=info.allocatable + Resources(extra)) if extra else info
