"""The simulated kubelets' Dynamic Resource Allocation drivers: the ResourceSlices a node publishes.

`resource_slices(node, devices)` is what a node's DRA drivers publish: one ResourceSlice per
driver (pool named after the node, generation 1, one slice in the pool), its devices with typed
attributes (`{"string": ...}`, `{"int": ...}`, `{"bool": ...}`) and capacities. The kubelets
create them with the node and delete them with it. Pure. The resourceclaim controller's
stand-in is `control/resource_claims.py`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from services.simulator.kubelets.nodes import DEVICES_ANNOTATION
from services.simulator.store.api_resources import BY_PATH

Obj = dict[str, Any]

RESOURCE_SLICES = BY_PATH[("resource.k8s.io", "v1", "resourceslices")]


def node_devices(node: Obj) -> list[Mapping[str, Any]]:
    """The `devices` entries a Node's annotation gives it (none when it is absent or unreadable)."""
    text = ((node.get("metadata") or {}).get("annotations") or {}).get(DEVICES_ANNOTATION)
    if not text:
        return []
    try:
        entries = json.loads(text)
    except ValueError:
        return []
    return (
        [e for e in entries if isinstance(e, Mapping) and e.get("driver")]
        if isinstance(entries, list)
        else []
    )


def _attribute(value: Any) -> Obj:
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    return {"string": str(value)}


def resource_slices(node: str, devices: Iterable[Mapping[str, Any]]) -> list[Obj]:
    """The ResourceSlices a node's drivers publish for the nodes file's `devices` entries
    ({driver, count, namePrefix, attributes, capacity}); devices are numbered per driver."""
    by_driver: dict[str, list[Obj]] = {}
    for entry in devices:
        driver = str(entry["driver"])
        listed = by_driver.setdefault(driver, [])
        prefix = str(entry.get("namePrefix") or "dev")
        for _ in range(int(entry.get("count", 1))):
            listed.append(
                {
                    "name": f"{prefix}-{len(listed)}",
                    "attributes": {k: _attribute(v) for k, v in (entry.get("attributes") or {}).items()},
                    "capacity": {k: {"value": str(v)} for k, v in (entry.get("capacity") or {}).items()},
                }
            )
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{driver.replace('/', '-')}"},
            "spec": {
                "driver": driver,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                "devices": listed,
            },
        }
        for driver, listed in by_driver.items()
    ]
