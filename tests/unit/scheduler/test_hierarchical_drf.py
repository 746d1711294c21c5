"""drf with enableHierarchy: queue order and reclaim by hierarchical dominant share (hDRF).

Queues sit in a tree given by their annotations volcano.sh/hierarchy and
volcano.sh/hierarchy-weights; the queue whose path has the lower share / weight at the first
level that differs goes first, and reclaim takes a victim only while the reclaimer's queue would
still come first once the victim is gone and its task placed. Written from Volcano's drf plugin.
"""

from __future__ import annotations

import pytest

from services.scheduler.core import ConfError, GangInfo, QueueInfo, SchedulerConf, parse_conf
from tests.unit.scheduler.builders import bound_gangs, gang, node, plan, queue, request, running, task

pytestmark = pytest.mark.unit


def hdrf_conf(actions: str = "enqueue, allocate", hierarchy: bool = True) -> SchedulerConf:
    return parse_conf(
        f"""
actions: "{actions}"
tiers:
- plugins: [{{name: priority}}, {{name: gang}}, {{name: conformance}}]
- plugins:
  - {{name: drf, enableHierarchy: {str(hierarchy).lower()}}}
  - {{name: predicates}}
  - {{name: nodeorder}}
"""
    )


def tree_queue(name: str, path: str, weights: str | None = None) -> QueueInfo:
    annotations = {"volcano.sh/hierarchy": path}
    if weights is not None:
        annotations["volcano.sh/hierarchy-weights"] = weights
    return queue(name, annotations=annotations)


@pytest.mark.parametrize(
    ("eng_weights", "hierarchy", "winner"),
    [
        (None, True, "pending-sci"),  # sci holds less (1 of 8 CPUs against 2): it goes first
        ("1/4/1", True, "pending-eng"),  # eng weighs 4: 2/8 / 4 is below sci's 1/8
        (None, False, "pending-eng"),  # without the hierarchy, queues go by name
    ],
    ids=["lower-share-first", "weight-divides-share", "hierarchy-off"],
)
def test_queue_order_follows_the_hierarchical_share(
    eng_weights: str | None, hierarchy: bool, winner: str
) -> None:
    queues = [
        queue("default"),
        tree_queue("a-eng", "root/eng/a-eng", eng_weights),
        tree_queue("b-sci", "root/sci/b-sci"),
    ]
    gangs = [
        running(gang("held-eng", 1, request("2"), queue="a-eng"), ["n1"]),
        running(gang("held-sci", 1, request("1"), queue="b-sci"), ["n1"]),
        # 5 CPUs are left: room for one of these two only
        gang("pending-eng", 1, request("5"), queue="a-eng"),
        gang("pending-sci", 1, request("5"), queue="b-sci"),
    ]
    result = plan([node("n1", cpu="8")], gangs, queues, conf=hdrf_conf(hierarchy=hierarchy))
    assert bound_gangs(result) == [winner]


def partly_running(name: str, queue_name: str, cpu: str) -> GangInfo:
    """A gang with one task running on n1 and one that fits nowhere: it wants more (unsaturated)."""
    return gang(
        name,
        tasks=[
            task(f"{name}-0", request(cpu), node="n1", status="Running"),
            task(f"{name}-1", request("100")),
        ],
        min_member=1,
        queue=queue_name,
        phase="Running",
    )


@pytest.mark.parametrize(
    ("hierarchy", "winner"), [(True, "pending-many"), (False, "pending-few")], ids=["hdrf", "by-name"]
)
def test_a_subtree_counts_by_how_evenly_it_is_served(hierarchy: bool, winner: str) -> None:
    # "many" runs 1 + 3 CPUs in two gangs, "few" 3 CPUs in one. Summed, "many" holds more; but a
    # subtree's children count scaled to its least-served one (3 CPUs count as 1 here), so
    # "many" counts 2 CPUs against 3 and goes first.
    queues = [queue("default"), tree_queue("many", "root/many"), tree_queue("few", "root/few")]
    gangs = [
        partly_running("m1", "many", "1"),
        partly_running("m3", "many", "3"),
        partly_running("f3", "few", "3"),
        # 9 CPUs are left: room for one of these two only
        gang("pending-many", 1, request("6"), queue="many"),
        gang("pending-few", 1, request("6"), queue="few"),
    ]
    result = plan([node("n1", cpu="16", memory="64Gi")], gangs, queues, conf=hdrf_conf(hierarchy=hierarchy))
    assert [g for g in bound_gangs(result) if g.startswith("pending")] == [winner]


@pytest.mark.parametrize(
    ("held_by_b", "expected_victims"),
    [(0, 1), (3, 0)],
    ids=["reclaimer-queue-below-its-share", "reclaimer-queue-would-overtake"],
)
def test_reclaim_takes_victims_only_while_the_reclaimer_queue_stays_first(
    held_by_b: int, expected_victims: int
) -> None:
    queues = [queue("default"), tree_queue("a", "root/a"), tree_queue("b", "root/b")]
    gangs = [running(gang("big", 4 - held_by_b, request("1"), min_member=1, queue="a"), ["n1"])]
    if held_by_b:
        gangs.append(running(gang("held", held_by_b, request("1"), min_member=1, queue="b"), ["n1"]))
    gangs.append(gang("want", 1, request("1"), queue="b"))
    result = plan([node("n1", cpu="4")], gangs, queues, conf=hdrf_conf("enqueue, allocate, reclaim"))
    assert len(result.evictions) == expected_victims
    assert {e.reason for e in result.evictions} <= {"reclaim"}


def test_without_hierarchy_drf_judges_no_reclaim() -> None:
    queues = [queue("default"), tree_queue("a", "root/a"), tree_queue("b", "root/b")]
    gangs = [
        running(gang("big", 4, request("1"), min_member=1, queue="a"), ["n1"]),
        gang("want", 1, request("1"), queue="b"),
    ]
    conf = hdrf_conf("enqueue, allocate, reclaim", hierarchy=False)
    assert plan([node("n1", cpu="4")], gangs, queues, conf=conf).evictions == ()


@pytest.mark.parametrize(
    ("tiers", "conflict"),
    [
        ("- plugins: [{name: drf, enableHierarchy: true}, {name: proportion}]", True),
        ("- plugins: [{name: drf, enableHierarchy: true}]\n- plugins: [{name: proportion}]", False),
        ("- plugins: [{name: drf}, {name: proportion}]", False),
    ],
    ids=["same-tier", "different-tiers", "hierarchy-off"],
)
def test_proportion_and_hierarchical_drf_conflict_in_one_tier(tiers: str, conflict: bool) -> None:
    text = f'actions: "enqueue, allocate"\ntiers:\n{tiers}\n'
    if conflict:
        with pytest.raises(ConfError, match="proportion and drf with hierarchy enabled conflicts"):
            parse_conf(text)
    else:
        parse_conf(text)
