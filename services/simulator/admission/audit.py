"""What a benchmark reads back from the simulated API server, like kube-apiserver's audit log.

The HTTP layer records every write it served (by verb and resource) and, for pods, the wall-clock
instants at which each was created and bound. `phalanx bench` reads these through the control API
(`GET /simulator/v1/audit`) to count writes per pod and to measure created → bound latency with
the server's own clock, as Volcano's benchmark does from apiserver audit events, so the load
generator's own delays never enter the figures.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from typing import Any


class Audit:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self.writes: Counter[str] = Counter()
        self.pods_created: dict[str, float] = {}
        self.pods_bound: dict[str, float] = {}

    def write(self, verb: str, resource: str) -> None:
        self.writes[f"{verb} {resource}"] += 1

    def pod_created(self, namespace: str, name: str) -> None:
        self.pods_created[f"{namespace}/{name}"] = self._clock()

    def pod_bound(self, namespace: str, name: str) -> None:
        self.pods_bound[f"{namespace}/{name}"] = self._clock()

    def reset(self) -> None:
        self.writes.clear()
        self.pods_created.clear()
        self.pods_bound.clear()

    def report(self, *, pods: bool) -> dict[str, Any]:
        answer: dict[str, Any] = {
            "writes": dict(self.writes),
            "writesTotal": sum(self.writes.values()),
            "podsCreatedCount": len(self.pods_created),
            "podsBoundCount": len(self.pods_bound),
        }
        if pods:
            answer["podsCreated"] = self.pods_created
            answer["podsBound"] = self.pods_bound
        return answer
