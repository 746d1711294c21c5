"""Settled gangs booked from their sums plan exactly as when every gang is walked.

`core/settled.py` lets `build_context` book the gangs that have nothing to place or release
from running sums instead of a view per task. Whatever the cluster and configuration, the plan
must not change: same binds, verdicts, enqueues, nominations and queue figures.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.scheduler.core import DEFAULT_CONF, SchedulerConf, Snapshot, plan_cycle
from services.scheduler.core.settled import footprint, settled_of
from tests.unit.scheduler.builders import NOW, conf_with, gang, node, queue, request, running, snapshot, task
from tests.unit.scheduler.test_properties import snapshots

pytestmark = pytest.mark.unit


def _with_sums(cluster: Snapshot) -> Snapshot:
    return replace(cluster, settled=settled_of(cluster.gangs, {q.name for q in cluster.queues}))


LEAN_CONFS = [
    DEFAULT_CONF,
    conf_with("predicates", "proportion", "binpack"),
    conf_with("predicates", "capacity", "nodeorder"),
    conf_with("predicates", "drf", "overcommit", "proportion", actions="enqueue, allocate"),
    conf_with("predicates", "proportion", actions="allocate, backfill"),
]


@st.composite
def settling(draw: st.DrawFn) -> tuple[Snapshot, SchedulerConf]:
    """A drawn cluster in which some gangs have all their members placed or finished."""
    cluster, conf = draw(snapshots())
    conf = draw(st.sampled_from([conf, *LEAN_CONFS]))
    names = [n.name for n in cluster.nodes] + ["gone"]
    gangs = []
    for g in cluster.gangs:
        if draw(st.booleans()):
            tasks = tuple(
                replace(
                    t,
                    status=draw(st.sampled_from(["Running", "Bound", "Succeeded", "Failed"])),
                    node=draw(st.sampled_from(names)),
                )
                for t in g.tasks
            )
            g = replace(g, tasks=tasks, phase=draw(st.sampled_from(["Running", "Inqueue", "Unknown"])))
        gangs.append(g)
    return replace(cluster, gangs=tuple(gangs)), conf


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(settling())
def test_a_plan_with_settled_sums_is_the_plan_of_every_gang_walked(
    drawn: tuple[Snapshot, SchedulerConf],
) -> None:
    cluster, conf = drawn
    assert plan_cycle(_with_sums(cluster), conf) == plan_cycle(cluster, conf)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(snapshots(contested=True))
def test_evicting_configurations_walk_every_gang(drawn: tuple[Snapshot, object]) -> None:
    cluster, conf = drawn
    assert plan_cycle(_with_sums(cluster), conf) == plan_cycle(cluster, conf)  # type: ignore[arg-type]


def test_a_running_gang_is_settled_and_one_with_work_is_not() -> None:
    done = running(gang("done", tasks=[task("d-0"), task("d-1")], min_member=2), ["n0"])
    short = gang("short", tasks=[task("s-0", node="n0", status="Running"), task("s-1")], phase="Running")
    waiting = gang("waiting", tasks=[task("w-0")])
    queues = {"default"}
    settled = footprint(done, queues)
    assert settled is not None
    assert dict(settled.alloc) == dict(request() + request())
    assert footprint(short, queues) is None  # a member still pending
    assert footprint(waiting, queues) is None
    assert footprint(done, {"other"}) is None  # its queue unknown: walked, as build_context does


def test_a_new_gang_is_placed_on_the_room_settled_gangs_leave() -> None:
    full = running(gang("full", tasks=[task("f-0", request("3"))]), ["n0"])
    newcomer = gang("new", tasks=[task("x-0", request("2"))])
    cluster = snapshot([node("n0", cpu="4"), node("n1", cpu="4")], [full, newcomer], [queue()], now=NOW)
    plan = plan_cycle(_with_sums(cluster))
    assert [b.node for g in plan.binds for b in g.binds] == ["n1"]
    assert plan == plan_cycle(cluster)
