"""Fakes for driving the simulator's store and kubelets without a loop or a wall clock."""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from services.simulator.app import build
from services.simulator.cluster import Cluster
from services.simulator.kubelets.nodes import NodeSpec
from services.simulator.settings import SimulatorSettings


@dataclass
class FakeClock:
    now: datetime = field(default_factory=lambda: datetime(2026, 1, 1, tzinfo=UTC))

    def __call__(self) -> datetime:
        return self.now


@dataclass
class _ClockPort:
    """The simulator's `Clock` port over a `FakeClock` (the wall clock's seconds stay real)."""

    fake: FakeClock

    def now(self) -> datetime:
        return self.fake.now

    def monotonic(self) -> float:
        return time.monotonic()


@dataclass
class _Handle:
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeTimers:
    """call_later without a loop: `advance(seconds)` fires what falls due, in order."""

    def __init__(self, clock: FakeClock) -> None:
        self._clock = clock
        self._due: list[tuple[datetime, int, Callable[[], None], _Handle]] = []
        self._sequence = 0

    def call_later(self, delay: float, callback: Callable[[], None]) -> _Handle:
        handle = _Handle()
        self._sequence += 1
        when = self._clock.now + timedelta(seconds=delay)
        heapq.heappush(self._due, (when, self._sequence, callback, handle))
        return handle

    def advance(self, seconds: float = 0.0) -> None:
        until = self._clock.now + timedelta(seconds=seconds)
        while self._due and self._due[0][0] <= until:
            when, _, callback, handle = heapq.heappop(self._due)
            self._clock.now = max(self._clock.now, when)
            if not handle.cancelled:
                callback()
        self._clock.now = until


@dataclass
class SimulatedCluster:
    cluster: Cluster
    clock: FakeClock
    timers: FakeTimers


def make_cluster(nodes: list[NodeSpec] | None = None, **settings: object) -> SimulatedCluster:
    clock = FakeClock()
    timers = FakeTimers(clock)
    options = {"kubelet_start_delay": 1.0, **settings}
    cluster = build(
        SimulatorSettings(**options),  # type: ignore[arg-type]
        timers=timers,
        clock=_ClockPort(clock),
        nodes=nodes if nodes is not None else [NodeSpec("node-0", cpu="4", memory="8Gi")],
    )
    return SimulatedCluster(cluster, clock, timers)


@pytest.fixture
def sim() -> SimulatedCluster:
    return make_cluster()
