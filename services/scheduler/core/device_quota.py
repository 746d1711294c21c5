"""Pure: which queue resource a DRA device class counts as, when volcano-scheduler.conf maps it.

By default a device of class C counts as `deviceclass.resource.kubernetes.io/C` (or as the class's
`spec.extendedResourceName`): the snapshot reader adds that many to the pod's request and each
node's device count to its allocatable (services/scheduler/device_snapshot.py). Kueue lets a
cluster name a logical resource for a set of classes (`deviceClassMappings`); Phalanx takes the
same list as an argument of the `capacity` or `proportion` plugin:

    - name: capacity
      arguments:
        deviceClassMappings:
          - {name: nvidia.com/gpu-a100, deviceClassNames: [a100.nvidia.com, a100-mig.nvidia.com]}

so that DRA devices of those classes and device-plugin GPUs named `nvidia.com/gpu-a100` share one
quota. `apply_mappings` renames the class resources in tasks' requests, nodes' allocatable and
queues' capability, guarantee and deserved (a queue's `spec.dra` names classes) before the cycle
builds its state; amounts of classes mapped to the same name add up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from services.scheduler.core.devices import CLASS_RESOURCE_PREFIX, mapping_problem
from services.scheduler.core.snapshot import Snapshot
from shared.domain.resources import Resources


def renames(value: Any) -> dict[str, str]:
    """Class resource name -> the mapped resource name, from a valid argument (else {})."""
    if value is None or mapping_problem(value) is not None:
        return {}
    return {
        CLASS_RESOURCE_PREFIX + class_name: str(entry["name"])
        for entry in value
        for class_name in entry["deviceClassNames"]
    }


def _renamed(amounts: Resources, names: Mapping[str, str]) -> Resources:
    if not any(name in names for name in amounts):
        return amounts
    result: dict[str, int] = {}
    for name, amount in amounts.items():
        target = names.get(name, name)
        result[target] = result.get(target, 0) + amount
    return Resources(result)


def apply_mappings(snapshot: Snapshot, names: Mapping[str, str]) -> Snapshot:
    if not names:
        return snapshot
    nodes = tuple(replace(n, allocatable=_renamed(n.allocatable, names)) for n in snapshot.nodes)
    queues = tuple(
        replace(
            q,
            capability=None if q.capability is None else _renamed(q.capability, names),
            guarantee=_renamed(q.guarantee, names),
            deserved=None if q.deserved is None else _renamed(q.deserved, names),
        )
        for q in snapshot.queues
    )
    gangs = tuple(
        replace(g, tasks=tuple(replace(t, request=_renamed(t.request, names)) for t in g.tasks))
        if any(t.device_claims for t in g.tasks)
        else g
        for g in snapshot.gangs
    )
    return replace(snapshot, nodes=nodes, queues=queues, gangs=gangs)
