"""Shell: writing the scheduler's DRA allocation to a pod's ResourceClaims before the pod is bound.

kube-scheduler's DynamicResources plugin, in its PreBind step, writes each claim's
`status.allocation` (the devices, one result per device with its request, driver, pool and name,
and a node selector for the node) and adds the pod to `status.reservedFor`; only then does it bind
the pod. The controller does the same for a `GangPlaced` bind that carries devices (gangs.py), so
the kubelet (and anyone else) sees the claims allocated before the pod is on the node.

Each write is a merge patch of the claim's status with its resourceVersion as a precondition, so
a concurrent change is refused rather than overwritten. Writing again what is already there (a
redelivered decision) is done at once; a claim found allocated to other devices, or gone, refuses
the pod's bind: the scheduler decides again from what the cluster shows.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Protocol

from shared.kube.client import ApiError
from shared.messages import decisions as msg
from shared.volcano.objects import KubeObject

Json = dict[str, Any]
ALLOCATED = "allocated"


class ClaimWriter(Protocol):
    async def get(self, kind_name: str, namespace: str | None, name: str) -> Json | None: ...

    async def patch(
        self, kind_name: str, namespace: str | None, name: str, patch: Json, *, subresource: str = ""
    ) -> Json | None: ...


def allocation(node: str, devices: list[msg.AllocatedDevice]) -> Json:
    results = [
        {"request": d.request, "driver": d.driver, "pool": d.pool, "device": d.device} for d in devices
    ]
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    return {"devices": {"results": results}, "nodeSelector": {"nodeSelectorTerms": [term]}}


def same_devices(written: Json, wanted: Json) -> bool:
    def key(found: Json) -> list[tuple[str, ...]]:
        results = (found.get("devices") or {}).get("results") or []
        return sorted(tuple(str(r.get(f)) for f in ("request", "driver", "pool", "device")) for r in results)

    return key(written) == key(wanted)


async def allocate_claims(kube: ClaimWriter, bind: msg.PodBinding) -> str:
    """ "allocated" when every claim of the bind holds its devices and the pod, else why not."""
    by_claim: dict[str, list[msg.AllocatedDevice]] = defaultdict(list)
    for device in bind.devices:
        by_claim[device.claim].append(device)
    consumer = {"resource": "pods", "name": bind.name, "uid": bind.uid}
    for name, devices in sorted(by_claim.items()):
        claim = await kube.get("ResourceClaim", bind.namespace, name)
        if claim is None:
            return f"resourceclaim {name} is gone"
        status = claim.get("status") or {}
        wanted = allocation(bind.node, devices)
        current = status.get("allocation")
        if current is not None and not same_devices(current, wanted):
            return f"resourceclaim {name} is allocated to other devices"
        reserved = [r for r in status.get("reservedFor") or [] if r.get("uid") != bind.uid]
        patch = {
            "metadata": {"resourceVersion": KubeObject(claim).meta.get("resourceVersion")},
            "status": {"allocation": current or wanted, "reservedFor": [*reserved, consumer]},
        }
        try:
            written = await kube.patch("ResourceClaim", bind.namespace, name, patch, subresource="status")
        except ApiError as error:
            if error.status == 409:
                return f"resourceclaim {name} changed while it was being allocated"
            raise
        if written is None:
            return f"resourceclaim {name} is gone"
    return ALLOCATED
