"""Property: no reservation is ever delayed by a gang backfilled around it whose estimate held.

For random clusters, running gangs and waiting gangs: the first waiting gang's reservation, planned
with no other gang waiting behind it, starts exactly when it does once the later gangs are there
and some of them were backfilled (they count as running from now for their estimated time). And
every gang backfilled touches a reserved node only if it is expected to end before the start.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from services.scheduler.core import GangInfo, SchedulerConf, parse_conf, plan_cycle
from services.scheduler.core.estimates import EXPECTED_RUNTIME
from services.scheduler.core.snapshot import QueueInfo, Snapshot, TaskInfo
from tests.unit.scheduler.builders import NOW, gang, node, request

pytestmark = pytest.mark.unit

CONF: SchedulerConf = parse_conf(
    """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: predicates}, {name: nodeorder}]
configurations:
- name: backfill
  arguments: {reservation: backfill}
"""
)

gang_shape = st.tuples(
    st.integers(1, 3),  # tasks
    st.integers(1, 4),  # cpu per task
    st.one_of(st.none(), st.integers(5, 300)),  # estimate, seconds (None: unknown)
)


def _gang(name: str, size: int, cpu: int, seconds: int | None, age: int) -> GangInfo:
    annotations = {EXPECTED_RUNTIME: f"{seconds}s"} if seconds is not None else {}
    return gang(name, size, request(str(cpu), "1Gi"), age=age, annotations=annotations)


def _place(g: GangInfo, free: list[int], started_ago: int) -> GangInfo | None:
    """The gang running, first fit over `free` (cpu per node), or None when it does not fit."""
    tasks = []
    for t in g.tasks:
        cpu = t.request["cpu"] // 1000
        spot = next((i for i, room in enumerate(free) if room >= cpu), None)
        if spot is None:
            return None
        free[spot] -= cpu
        fields = {s: getattr(t, s) for s in t.__slots__}
        fields.update(node=f"n{spot}", status="Running", started=NOW - timedelta(seconds=started_ago))
        tasks.append(TaskInfo(**fields))
    fields = {s: getattr(g, s) for s in g.__slots__}
    fields.update(tasks=tuple(tasks), phase="Running")
    return GangInfo(**fields)


def _fields(obj: object) -> dict[str, object]:
    return {s: getattr(obj, s) for s in obj.__slots__}  # type: ignore[attr-defined]


def _snapshot(nodes: list[int], gangs: list[GangInfo]) -> Snapshot:
    return Snapshot(
        nodes=tuple(node(f"n{i}", cpu=str(cpu), memory="64Gi") for i, cpu in enumerate(nodes)),
        queues=(QueueInfo(name="default"),),
        gangs=tuple(gangs),
        now=NOW,
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    nodes=st.lists(st.integers(2, 8), min_size=2, max_size=5),
    running=st.lists(
        st.tuples(st.tuples(st.integers(1, 3), st.integers(1, 4), st.integers(5, 300)), st.integers(0, 100)),
        min_size=1,
        max_size=4,
    ),
    head=st.tuples(st.integers(2, 6), st.integers(2, 4), st.integers(5, 300)),
    later=st.lists(gang_shape, max_size=5),
)
def test_backfilled_gangs_never_delay_the_reservation(
    nodes: list[int],
    running: list[tuple[tuple[int, int, int | None], int]],
    head: tuple[int, int, int],
    later: list[tuple[int, int, int | None]],
) -> None:
    free = list(nodes)
    placed_running = []
    for index, ((size, cpu, seconds), ago) in enumerate(running):
        placed = _place(_gang(f"run{index}", size, cpu, seconds, 1000 + index), free, ago)
        if placed is not None:
            placed_running.append(placed)
    first = _gang("head", head[0], head[1], head[2], 500)
    alone = plan_cycle(_snapshot(nodes, [*placed_running, first]), CONF)
    reserved = [p for p in alone.predictions if p.reserved]
    assume(reserved and reserved[0].gang_uid == "head" and reserved[0].start is not None)
    start = reserved[0].start
    assert start is not None

    waiting = [_gang(f"later{i}", *shape, age=400 - i) for i, shape in enumerate(later)]
    crowded = plan_cycle(_snapshot(nodes, [*placed_running, first, *waiting]), CONF)
    backfilled = {g.gang_uid: {b.node for b in g.binds} for g in crowded.binds}
    assert "head" not in backfilled
    event(f"backfilled {min(len(backfilled), 2)}")

    # Those backfilled now run from now for their estimate: the head's start must not move.
    nodes_by_task = {b.task_uid: b.node for g in crowded.binds for b in g.binds}
    now_running = []
    for g in waiting:
        if g.uid not in backfilled:
            continue
        tasks = tuple(
            TaskInfo(**{**_fields(t), "node": nodes_by_task[t.uid], "status": "Running", "started": NOW})
            for t in g.tasks
        )
        now_running.append(GangInfo(**{**_fields(g), "tasks": tasks, "phase": "Running"}))
    after = plan_cycle(_snapshot(nodes, [*placed_running, first, *now_running]), CONF)
    head_after = next(p for p in after.predictions if p.gang_uid == "head")
    assert head_after.start == start
