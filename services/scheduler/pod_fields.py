"""Pure: the pod fields beyond requests and node constraints that scheduling reads.

`projection._pod` adds `scheduling_fields(pod)` to the pod row's `placement` column (JSON, so no
new column); `snapshot_reader._task` and `_other_pod` read them back with `task_fields` into the
core's `TaskInfo` / `OtherPod`. Only what differs from the default is stored, so a plain pod's
row is unchanged:
- `schedulingGates`: the names of the pod's gates (it is not scheduled while there are any);
- `hostPorts`: (hostIP, protocol, port) its containers ask for (the NodePorts filter);
- `preemptable`: False when `volcano.sh/preemptable` (annotation, else label) says the pod may
  not be preempted or reclaimed; as Volcano reads it, a value that is not a boolean means false;
- `preemptionPolicy`: "Never" when the pod (from its PriorityClass) may not preempt others;
- `topologySpreadConstraints`: as the pod spec gives them (the PodTopologySpread filter);
- `claims`: the PersistentVolumeClaims it mounts (the VolumeBinding filter; the reader resolves
  them against `storage_objects` each cycle, since a claim binds without the pod changing);
- `deviceClaims`: its DRA ResourceClaims, [name in the pod, claim name or null until generated]
  (device_rows.py; resolved against `device_objects` each cycle, as claims are).
- `startTime` and `activeDeadlineSeconds`: when it started and how long it may run, which
  reservation backfill plans with (core/estimates.py, core/reservation.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from services.scheduler.core.config import parse_duration
from services.scheduler.core.estimates import parse_instant
from services.scheduler.core.node_ports import host_ports_of
from services.scheduler.core.snapshot import HostPort
from services.scheduler.device_rows import pod_claims
from services.scheduler.storage_rows import claim_names
from shared.volcano.keys import PREEMPTABLE, SLA_WAITING_TIME
from shared.volcano.objects import PodObject

# The sla plugin's per-job waiting time, on the PodGroup (Volcano also reads the legacy key).
SLA_WAITING_TIME_KEYS = (SLA_WAITING_TIME, "sla-waiting-time")
_GO_TRUE = ("1", "t", "T", "TRUE", "true", "True")


def scheduling_fields(view: PodObject) -> dict[str, Any]:
    pod, spec = view.raw, view.spec
    fields: dict[str, Any] = {}
    gates = [str((g or {}).get("name", "")) for g in spec.get("schedulingGates") or () if isinstance(g, dict)]
    if gates:
        fields["schedulingGates"] = gates
    ports = host_ports_of(spec)
    if ports:
        fields["hostPorts"] = [list(port) for port in ports]
    if not preemptable(view.annotations, view.labels):
        fields["preemptable"] = False
    spread = [c for c in spec.get("topologySpreadConstraints") or () if isinstance(c, dict)]
    if spread:
        fields["topologySpreadConstraints"] = spread
    if spec.get("preemptionPolicy") == "Never":
        fields["preemptionPolicy"] = "Never"
    claims = claim_names(spec)
    if claims:
        fields["claims"] = claims
    device_claims = pod_claims(pod)
    if device_claims:
        fields["deviceClaims"] = device_claims
    started = view.status.get("startTime")
    if isinstance(started, str) and started:
        fields["startTime"] = started
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and not isinstance(deadline, bool) and deadline > 0:
        fields["activeDeadlineSeconds"] = deadline
    return fields


def preemptable(annotations: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """Volcano's GetPodPreemptable: annotation first, then label; absent means true."""
    value = annotations.get(PREEMPTABLE, labels.get(PREEMPTABLE))
    if value is None:
        return True
    return str(value) in _GO_TRUE


def task_fields(placement: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of `TaskInfo` that `scheduling_fields` stored."""
    return {
        "scheduling_gated": bool(placement.get("schedulingGates")),
        "host_ports": stored_ports(placement),
        "preemptable": placement.get("preemptable", True) is not False,
        "preemption_policy": placement.get("preemptionPolicy") or "PreemptLowerPriority",
        "spread_constraints": tuple(placement.get("topologySpreadConstraints") or ()),
        "started": parse_instant(placement.get("startTime")),
        "active_deadline_seconds": placement.get("activeDeadlineSeconds"),
    }


def stored_ports(placement: Mapping[str, Any]) -> tuple[HostPort, ...]:
    stored = placement.get("hostPorts") or ()
    return tuple((str(ip), str(protocol), int(port)) for ip, protocol, port in stored)


def sla_waiting_time(annotations: Mapping[str, Any]) -> timedelta | None:
    """The PodGroup's own SLA, which overrides the plugin's `sla-waiting-time`."""
    for key in SLA_WAITING_TIME_KEYS:
        if key in annotations:
            return parse_duration(annotations[key])
    return None
