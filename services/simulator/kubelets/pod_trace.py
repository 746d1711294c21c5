"""The ordered record of every pod change that matters for placement, for `phalanx chaos`'s oracle.

The store calls `PodTrace.record` with each committed pod event, in resourceVersion order. Only a
change of node, phase or existence is kept (a label or condition update is not), as one compact
record: which pod (uid and name), its gang (the group-name annotation), the node it is bound to,
its phase, and what it requests in milli-units. Replaying these in order gives, at every instant,
what each node holds, so the oracle can check that no node was over-committed and no pod bound
twice from the server's own account rather than from what Phalanx believes. Each PodGroup's
minMember and queue are kept too (`record_group`), beyond the group's deletion: a finished job's
PodGroup is deleted, and the oracle still needs to know how many of its pods made the gang whole
and which queue's capability they counted against. Served under
`GET /simulator/v1/audit/trace`; the records stay in memory until `DELETE /simulator/v1/audit`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from services.simulator.kubelets.kubelet import requests_of
from services.simulator.store.history import WatchEvent
from shared.volcano.keys import GROUP_NAME as GROUP_ANNOTATION


def _placement(pod: dict[str, Any] | None) -> tuple[str, str]:
    if pod is None:
        return "", ""
    return pod["spec"].get("nodeName") or "", (pod.get("status") or {}).get("phase") or ""


class PodTrace:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self.records: list[dict[str, Any]] = []
        self.min_member: dict[str, int] = {}  # namespace/name of a PodGroup -> its last minMember
        self.queue: dict[str, str] = {}  # namespace/name of a PodGroup -> its last queue

    def record(self, event: WatchEvent) -> None:
        pod = event.object
        if event.type == "MODIFIED" and _placement(event.old) == _placement(pod):
            return
        metadata = pod["metadata"]
        node, phase = _placement(pod)
        status = pod.get("status") or {}
        self.records.append(
            {
                "rv": event.resource_version,
                "at": self._clock(),
                "type": event.type,
                "uid": metadata["uid"],
                "pod": f"{metadata['namespace']}/{metadata['name']}",
                "group": (metadata.get("annotations") or {}).get(GROUP_ANNOTATION, ""),
                "node": node,
                "phase": phase,
                "reason": status.get("reason") or "",
                "requests": dict(requests_of(pod)),
            }
        )

    def record_group(self, event: WatchEvent) -> None:
        if event.type == "DELETED":
            return
        metadata = event.object["metadata"]
        spec = event.object.get("spec") or {}
        group = f"{metadata['namespace']}/{metadata['name']}"
        self.min_member[group] = int(spec.get("minMember") or 1)
        self.queue[group] = str(spec.get("queue") or "default")

    def report(self) -> dict[str, Any]:
        return {"records": self.records, "minMember": self.min_member, "queue": self.queue}

    def reset(self) -> None:
        self.records.clear()
        self.min_member.clear()
        self.queue.clear()
