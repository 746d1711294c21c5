"""The pod statuses a simulated kubelet writes, and its admission check. Pure.

A bound pod moves Pending → Running (containers started and ready, an IP, a start time) →
Succeeded or Failed (every container terminated with the exit code); a pod that does not fit
what is left on its node is refused as a real kubelet refuses it (Failed, reason OutOfcpu,
"Pod was rejected: Node didn't have enough resource: ..."). Each function takes the stored pod
and returns the new object, never touching the one it was given.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from shared.domain.resources import CPU, Resources

RUN_SECONDS = "simulator.phalanx/run-seconds"
EXIT_CODE = "simulator.phalanx/exit-code"
STOP_SECONDS = "simulator.phalanx/stop-seconds"


@dataclass(frozen=True)
class Rejection:
    reason: str
    message: str


def admit(requests: Resources, used: Mapping[str, int], allocatable: Mapping[str, int]) -> Rejection | None:
    """None when the pod fits what is left on the node, else the kubelet's refusal."""
    for name, amount in sorted(requests.items()):
        capacity = allocatable.get(name, 0)
        already = used.get(name, 0)
        if already + amount > capacity:

            def shown(milli: int, cpu: bool = name == CPU) -> int:
                return milli if cpu else -(-milli // 1000)

            return Rejection(
                f"OutOf{name}",
                "Pod was rejected: Node didn't have enough resource: "
                f"{name}, requested: {shown(amount)}, used: {shown(already)}, "
                f"capacity: {shown(capacity)}",
            )
    return None


def with_condition(conditions: list[dict[str, Any]], condition: dict[str, Any]) -> list[dict[str, Any]]:
    """The list with `condition` replacing any of the same type (kept in place)."""
    replaced = [condition if c.get("type") == condition["type"] else c for c in conditions]
    if not any(c.get("type") == condition["type"] for c in conditions):
        replaced.append(condition)
    return replaced


def condition(type_: str, status: bool, now: str, reason: str | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {
        "type": type_,
        "status": "True" if status else "False",
        "lastProbeTime": None,
        "lastTransitionTime": now,
    }
    if reason:
        found["reason"] = reason
    return found


def _with_status(pod: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    return {**pod, "status": {**(pod.get("status") or {}), **changes}}


def bound(pod: dict[str, Any], node: str, now: str) -> dict[str, Any]:
    """What pods/binding stores: the node name and PodScheduled=True."""
    conditions = with_condition(
        (pod.get("status") or {}).get("conditions") or [], condition("PodScheduled", True, now)
    )
    return _with_status({**pod, "spec": {**pod["spec"], "nodeName": node}}, {"conditions": conditions})


def _container_id(pod: dict[str, Any], container: str) -> str:
    digest = hashlib.sha256(f"{pod['metadata']['uid']}/{container}".encode()).hexdigest()
    return f"containerd://{digest}"


def running(pod: dict[str, Any], host_ip: str, pod_ip: str, now: str) -> dict[str, Any]:
    conditions = (pod.get("status") or {}).get("conditions") or []
    for type_ in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady"):
        conditions = with_condition(conditions, condition(type_, True, now))
    statuses = [
        {
            "name": c["name"],
            "image": c.get("image", ""),
            "imageID": f"sha256:{c.get('image', '')}",
            "containerID": _container_id(pod, c["name"]),
            "ready": True,
            "started": True,
            "restartCount": 0,
            "state": {"running": {"startedAt": now}},
            "lastState": {},
        }
        for c in pod["spec"].get("containers") or []
    ]
    return _with_status(
        pod,
        {
            "phase": "Running",
            "conditions": conditions,
            "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "startTime": now,
            "containerStatuses": statuses,
        },
    )


def terminated(pod: dict[str, Any], exit_code: int, now: str) -> dict[str, Any]:
    status = pod.get("status") or {}
    succeeded = exit_code == 0
    started = status.get("startTime", now)
    conditions = status.get("conditions") or []
    reason = "PodCompleted" if succeeded else "PodFailed"
    for type_ in ("Ready", "ContainersReady"):
        conditions = with_condition(conditions, condition(type_, False, now, reason))
    statuses = [
        {
            "name": c["name"],
            "image": c.get("image", ""),
            "imageID": f"sha256:{c.get('image', '')}",
            "containerID": _container_id(pod, c["name"]),
            "ready": False,
            "started": False,
            "restartCount": 0,
            "lastState": {},
            "state": {
                "terminated": {
                    "exitCode": exit_code,
                    "reason": "Completed" if succeeded else "Error",
                    "startedAt": started,
                    "finishedAt": now,
                    "containerID": _container_id(pod, c["name"]),
                }
            },
        }
        for c in pod["spec"].get("containers") or []
    ]
    return _with_status(
        pod,
        {
            "phase": "Succeeded" if succeeded else "Failed",
            "conditions": conditions,
            "containerStatuses": statuses,
            "startTime": started,
        },
    )


def rejected(pod: dict[str, Any], rejection: Rejection, now: str) -> dict[str, Any]:
    return _with_status(
        pod,
        {
            "phase": "Failed",
            "reason": rejection.reason,
            "message": rejection.message,
            "startTime": now,
        },
    )


def unschedulable(pod: dict[str, Any], message: str, now: str) -> dict[str, Any]:
    found = condition("PodScheduled", False, now, "Unschedulable")
    found["message"] = message
    conditions = with_condition((pod.get("status") or {}).get("conditions") or [], found)
    return _with_status(pod, {"conditions": conditions})


def not_ready(pod: dict[str, Any], now: str) -> dict[str, Any]:
    """A pod on a NotReady node: still Running, no longer Ready (the node controller's doing)."""
    conditions = with_condition(
        (pod.get("status") or {}).get("conditions") or [], condition("Ready", False, now)
    )
    return _with_status(pod, {"conditions": conditions})


def ready_again(pod: dict[str, Any], now: str) -> dict[str, Any]:
    conditions = with_condition(
        (pod.get("status") or {}).get("conditions") or [], condition("Ready", True, now)
    )
    return _with_status(pod, {"conditions": conditions})


def planned_run(annotations: Mapping[str, str] | None) -> tuple[float, int] | None:
    """(seconds, exit code) from the pod's annotations, or None: it runs until told otherwise."""
    annotations = annotations or {}
    if RUN_SECONDS not in annotations:
        return None
    try:
        seconds = max(0.0, float(annotations[RUN_SECONDS]))
        exit_code = int(annotations.get(EXIT_CODE, "0"))
    except ValueError:
        return None
    return seconds, exit_code


def stop_seconds(annotations: Mapping[str, str] | None, default: float) -> float:
    """How long the pod's containers take to exit after SIGTERM (its annotation, else `default`)."""
    try:
        return max(0.0, float((annotations or {})[STOP_SECONDS]))
    except (KeyError, ValueError):
        return default


def is_terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
