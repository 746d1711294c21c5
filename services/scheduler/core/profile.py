"""Pure: each node's usage over the future, for reservations and start-time predictions.

`reservation.py` builds one `Profile` from the cycle's state and the gangs' expected ends: a node's
usage now is everything on it (allocatable minus idle), and it falls as each placed gang reaches
its expected end (pods being evicted free their room at once; pods with no estimate never do).
`earliest` finds the first moment a gang's tasks fit on their candidate nodes for the whole of the
gang's expected runtime; `hold` books that slot so later gangs plan around it, as Slurm's backfill
plans each job into the profile left by those before it. Times are seconds after the cycle's now.
"""

from __future__ import annotations

import math
from bisect import bisect_right, insort
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from services.scheduler.core.snapshot import RELEASING
from services.scheduler.core.state import CycleState, GangView
from services.scheduler.core.vectors import Sparse, add_into, fits

FOREVER = math.inf


@dataclass(frozen=True, slots=True)
class Need:
    """One task a gang needs placed to start: its request and the nodes its filters allow."""

    request: Sparse
    candidates: Sequence[int]


class Profile:
    """Per node: the moments its usage changes and the usage from each moment on."""

    def __init__(self, state: CycleState, end_of: Callable[[GangView], float]) -> None:
        self._allocatable = state.allocatable
        self._size = state.space.size
        self._times: list[list[float]] = []
        self._usage: list[list[list[int]]] = []
        moments: set[float] = {0.0}
        for node, idle in enumerate(state.idle):
            usage = [a - i for a, i in zip(self._allocatable[node], idle, strict=True)]
            releases: dict[float, list[int]] = defaultdict(lambda: [0] * self._size)
            for task in state.tasks_on_node[node].values():
                end = 0.0 if task.status == RELEASING else max(0.0, end_of(task.gang))
                if end < FOREVER:
                    add_into(releases[end], task.request)
            times, steps = [0.0], [usage]
            for moment in sorted(releases):
                usage = [u - r for u, r in zip(usage, releases[moment], strict=True)]
                if moment <= 0.0:
                    steps[0] = usage
                else:
                    times.append(moment)
                    steps.append(usage)
                    moments.add(moment)
            self._times.append(times)
            self._usage.append(steps)
        self._moments = sorted(moments)

    def free(self, node: int, start: float, duration: float) -> list[int]:
        """What stays free on `node` during the whole of [start, start + duration)."""
        times, steps = self._times[node], self._usage[node]
        index = bisect_right(times, start) - 1
        peak = list(steps[index])
        end = start + duration
        for later in range(index + 1, len(times)):
            if times[later] >= end:
                break
            peak = [max(p, u) for p, u in zip(peak, steps[later], strict=True)]
        return [a - p for a, p in zip(self._allocatable[node], peak, strict=True)]

    def fit_at(self, start: float, needs: Sequence[Need], duration: float) -> list[int] | None:
        """A node per need, first fit, when all fit from `start` for `duration`; else None."""
        free: dict[int, list[int]] = {}
        placement: list[int] = []
        for need in needs:
            for node in need.candidates:
                room = free.get(node)
                if room is None:
                    room = free[node] = self.free(node, start, duration)
                if fits(need.request, room):
                    add_into(room, need.request, -1)
                    placement.append(node)
                    break
            else:
                return None
        return placement

    def earliest(
        self, needs: Sequence[Need], duration: float, not_before: float = 0.0
    ) -> tuple[float, list[int]] | None:
        """The first moment from `not_before` (now, or when something frees) the gang fits, with
        its nodes; None when it never does (held by work with no estimate, or it is too big)."""
        if not_before >= FOREVER:
            return None
        if not_before > 0.0:
            self._split_all(not_before)
        for moment in self._moments[bisect_right(self._moments, not_before) - 1 :]:
            placement = self.fit_at(moment, needs, duration)
            if placement is not None:
                return moment, placement
        return None

    def hold(self, start: float, duration: float, needs: Sequence[Need], placement: Sequence[int]) -> None:
        """Book [start, start + duration) on the placed nodes, and free it again at its end."""
        end = start + duration
        for need, node in zip(needs, placement, strict=True):
            self._split(node, start)
            if end < FOREVER:
                self._split(node, end)
            times, steps = self._times[node], self._usage[node]
            for index in range(bisect_right(times, start) - 1, len(times)):
                if times[index] >= end:
                    break
                add_into(steps[index], need.request)
        if end < FOREVER and end not in self._moments:
            insort(self._moments, end)

    def _split_all(self, moment: float) -> None:
        if moment < FOREVER and moment not in self._moments:
            insort(self._moments, moment)

    def _split(self, node: int, moment: float) -> None:
        times, steps = self._times[node], self._usage[node]
        index = bisect_right(times, moment) - 1
        if times[index] != moment:
            times.insert(index + 1, moment)
            steps.insert(index + 1, list(steps[index]))
