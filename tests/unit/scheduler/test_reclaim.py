"""reclaim: a queue below its deserved share takes room back from queues above theirs.

Volcano's reclaim action with proportion (deserved shares by weight) or capacity (explicit
deserved): victims come only from other queues that are reclaimable and hold more than they
deserve, never below their guarantee, and gangs keep their minimum or go whole.
"""

from __future__ import annotations

import pytest

from services.scheduler.core import SchedulerConf, parse_conf
from services.scheduler.core.snapshot import QueueInfo
from tests.unit.scheduler.builders import conf_with, gang, node, plan, queue, request, running

pytestmark = pytest.mark.unit

PROPORTION = conf_with("predicates", "proportion", actions="enqueue, allocate, reclaim")
CAPACITY = conf_with("predicates", "capacity", actions="enqueue, allocate, reclaim")


def _cluster(q1: QueueInfo, conf: SchedulerConf) -> list[str]:
    hog = running(gang("hog", 4, request("1"), min_member=1, queue="q1"), ["n1"])
    fair = gang("fair", 2, request("1"), queue="q2")
    result = plan([node("n1", cpu="4")], [hog, fair], [q1, queue("q2")], conf=conf)
    assert {e.reason for e in result.evictions} <= {"reclaim"}
    assert {e.preemptor_gang_uid for e in result.evictions} <= {"fair"}
    return sorted(e.task_uid for e in result.evictions)


def test_queue_over_its_share_gives_back_what_the_starving_queue_deserves() -> None:
    # equal weights: each queue deserves 2 of the 4 CPUs; "hog" holds all 4 with minimum 1
    assert _cluster(queue("q1"), PROPORTION) == ["hog-worker-2", "hog-worker-3"]


@pytest.mark.parametrize(
    ("q1", "conf"),
    [
        (queue("q1", reclaimable=False), PROPORTION),
        (queue("q1", guarantee={"cpu": "4"}), PROPORTION),
        (queue("q1", weight=3), PROPORTION),
        (queue("q1", deserved={"cpu": "4"}), CAPACITY),
        (queue("q1", guarantee={"cpu": "3"}, deserved={"cpu": "2"}), CAPACITY),
    ],
    ids=[
        "not-reclaimable",
        "guarantee-covers-its-use",
        "heavier-queue-deserves-3",
        "capacity-deserved-covers-use",
        "capacity-guarantee-protects-part",
    ],
)
def test_queues_within_their_due_are_not_reclaimed(q1: QueueInfo, conf: SchedulerConf) -> None:
    # with a 3 CPU guarantee only one CPU could come back: too little for "fair", so none does
    assert _cluster(q1, conf) == []


def test_capacity_plugin_reclaims_above_explicit_deserved() -> None:
    assert _cluster(queue("q1", deserved={"cpu": "2"}), CAPACITY) == [
        "hog-worker-2",
        "hog-worker-3",
    ]


def test_reclaim_never_takes_from_the_preemptors_own_queue() -> None:
    hog = running(gang("hog", 4, request("1"), min_member=1, queue="q2"), ["n1"])
    fair = gang("fair", 2, request("1"), queue="q2", priority=100)
    result = plan([node("n1", cpu="4")], [hog, fair], [queue("q1"), queue("q2")], conf=PROPORTION)
    assert result.evictions == ()


def test_without_a_share_plugin_nothing_is_reclaimed() -> None:
    conf = parse_conf('actions: "allocate, reclaim"\ntiers: [{plugins: [{name: gang}, {name: predicates}]}]')
    assert _cluster(queue("q1"), conf) == []
