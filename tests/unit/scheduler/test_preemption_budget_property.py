"""Property: over any sequence of cycles, preemptioncost never evicts more than a budget allows.

Each cycle is a random cluster of GPU nodes held by low-priority gangs of two queues, with
high-priority gangs starving in both; the cycle sees the evictions of earlier cycles (as the
shell reads them from the decisions table) and time moves on by a random step. Counted over
every window that ends at a cycle, no queue loses more than `queueMaxPods` pods and the cluster
no more than `clusterMaxPods`.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from services.scheduler.core import GangInfo
from services.scheduler.core.config import parse_conf
from tests.unit.scheduler.builders import NOW, gang, node, plan, queue, request, running

pytestmark = pytest.mark.unit

GPU = "nvidia.com/gpu"
WINDOW = timedelta(hours=1)
QUEUE_MAX, CLUSTER_MAX = 2, 3
CONF = parse_conf(
    f"""
actions: "enqueue, allocate, preempt"
tiers:
- plugins: [{{name: priority}}, {{name: gang}}, {{name: conformance}}]
- plugins:
  - {{name: predicates}}
  - {{name: nodeorder}}
  - name: preemptioncost
    arguments: {{queueMaxPods: {QUEUE_MAX}, clusterMaxPods: {CLUSTER_MAX}, budgetWindow: 1h}}
"""
)

cycle_shape = st.tuples(
    st.lists(st.sampled_from(["q1", "q2"]), min_size=1, max_size=6),  # the queue holding each node
    st.integers(min_value=1, max_value=3),  # preemptors per queue
    st.integers(min_value=1, max_value=90),  # minutes until the next cycle
)


def _cycle(index: int, holders: list[str], preemptors: int, now: datetime) -> list[GangInfo]:
    gangs = []
    for n, holder in enumerate(holders):
        started = now - timedelta(hours=n + 1)
        g = gang(
            f"c{index}-low-{n}",
            1,
            request("1", **{GPU: "1"}),
            queue=holder,
            priority=1,
            created=started,
            task_fields={"started": started},
        )
        gangs.append(running(g, [f"n{n}"]))
    for q in ("q1", "q2"):
        gangs += [
            gang(f"c{index}-{q}-high-{p}", 1, request("1", **{GPU: "1"}), queue=q, priority=100)
            for p in range(preemptors)
        ]
    return gangs


@settings(max_examples=40, deadline=None)
@given(st.lists(cycle_shape, min_size=1, max_size=8))
def test_no_budget_is_ever_exceeded(cycles: list[tuple[list[str], int, int]]) -> None:
    history: list[tuple[str, datetime]] = []
    now = NOW
    ends: list[datetime] = []
    for index, (holders, preemptors, step) in enumerate(cycles):
        nodes = [node(f"n{n}", cpu="4", extra={GPU: "1"}) for n in range(len(holders))]
        gangs = _cycle(index, holders, preemptors, now)
        recent = tuple((q, at) for q, at in history if now - WINDOW < at <= now)
        result = plan(nodes, gangs, [queue("q1"), queue("q2")], conf=CONF, now=now, recent_evictions=recent)
        queue_of = {t.uid: g.queue for g in gangs for t in g.tasks}
        history += [(queue_of[e.task_uid], now) for e in result.evictions]
        ends.append(now)
        now += timedelta(minutes=step)
    for end in ends:
        inside = [q for q, at in history if end - WINDOW < at <= end]
        assert len(inside) <= CLUSTER_MAX
        for q in ("q1", "q2"):
            assert inside.count(q) <= QUEUE_MAX


def test_the_property_can_fail_without_budgets() -> None:
    """Without budgets the same cycles do evict more than the limits: the property tests something."""
    unbudgeted = parse_conf(
        """
actions: "enqueue, allocate, preempt"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: predicates}, {name: nodeorder}, {name: preemptioncost}]
"""
    )
    holders = ["q1", "q1", "q1", "q2", "q2"]
    nodes = [node(f"n{n}", cpu="4", extra={GPU: "1"}) for n in range(len(holders))]
    result = plan(nodes, _cycle(0, holders, 3, NOW), [queue("q1"), queue("q2")], conf=unbudgeted)
    assert len(result.evictions) > CLUSTER_MAX
