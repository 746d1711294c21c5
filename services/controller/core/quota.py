"""A pod's ResourceQuota usage: what one pod of a task adds to its PodGroup's minResources.

Volcano sums Kubernetes' quota "pod usage" lists (`pods`, `count/pods`, `cpu`, `memory`,
`requests.*`, `limits.*`, extended resources both bare and as `requests.<name>`) over the first
pods of the gang; `jobpodgroup` and `podgroups` call `pod_quota_usage` for that.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared.domain.resources import CPU, MEMORY, PODS, Resources, pod_requests

_STANDARD = (CPU, MEMORY)


def _limits(spec: Mapping[str, Any]) -> Resources:
    def of(container: Mapping[str, Any]) -> Resources:
        limits = (container.get("resources") or {}).get("limits") or {}
        return Resources.parse({k: v for k, v in limits.items() if k in _STANDARD})

    total = Resources.total(of(c) for c in spec.get("containers") or ())
    for init in spec.get("initContainers") or ():
        limit = of(init)
        total = Resources({n: max(total[n], limit[n]) for n in set(total) | set(limit)})
    if total and spec.get("overhead"):
        overhead = {k: v for k, v in spec["overhead"].items() if k in _STANDARD}
        total = total + Resources.parse(overhead)
    return total


def pod_quota_usage(pod_spec: Mapping[str, Any]) -> Resources:
    """Quota usage of one pod with this spec, as a milli-unit vector keyed by quota names."""
    requests = pod_requests(
        pod_spec.get("containers") or (),
        pod_spec.get("initContainers") or (),
        pod_spec.get("overhead"),
    )
    usage: dict[str, int] = {"pods": 1000, "count/pods": 1000}
    for name, amount in requests.items():
        if name == PODS:
            continue
        usage[name] = amount
        usage[f"requests.{name}"] = amount
    for name, amount in _limits(pod_spec).items():
        usage[f"limits.{name}"] = amount
    return Resources(usage)


def to_resource_list(usage: Resources) -> dict[str, str]:
    """A ResourceList for a manifest; memory-like quantities in binary units."""
    rendered = usage.to_quantities()
    for name in list(rendered):
        if name.endswith(f".{MEMORY}"):
            rendered[name] = Resources({MEMORY: usage[name]}).to_quantities()[MEMORY]
    return rendered
