"""enqueue: which Pending gangs are admitted (PodGroup Pending -> Inqueue) and why others wait.

From Volcano's enqueue action with the proportion, capacity, overcommit and sla plugins: a gang
is admitted when its queue is Open and its minResources fit the queue's capability (with what is
allocated and already admitted) and the overcommitted cluster; Phalanx checks capability on the
queue and every ancestor whatever the plugins, and Closed and Closing queues admit nothing.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from services.scheduler.core import GangInfo, parse_conf, plan_cycle
from services.scheduler.core.config import parse_duration
from tests.unit.scheduler.builders import (
    bound_gangs,
    conf_with,
    gang,
    node,
    plan,
    queue,
    request,
    res,
    running,
    snapshot,
)

pytestmark = pytest.mark.unit

RAY_QUEUE = queue("kuberay-test-queue", capability={"cpu": "4", "memory": "6Gi"})


def ray_gang(name: str, phase: str = "Pending") -> GangInfo:
    return gang(
        name,
        3,
        request("1", "1Gi"),
        queue="kuberay-test-queue",
        phase=phase,
        min_resources=res("3", "4Gi"),
    )


def test_second_gang_stays_wholly_pending_when_queue_capability_is_reached() -> None:
    nodes = [node("node-0", cpu="8", memory="16Gi"), node("node-1", cpu="8", memory="16Gi")]
    first = running(ray_gang("ray-0"), ["node-0"])
    result = plan(nodes, [first, ray_gang("ray-1")], [RAY_QUEUE])
    assert result.enqueued == ()
    assert result.binds == ()
    verdict = result.verdict_for("ray-1")
    assert verdict is not None
    assert verdict.reason == "QueueCapabilityExceeded"
    assert verdict.message == (
        "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable; "
        "Pending: 3 Unschedulable"
    )
    # 3 CPU / 3Gi in use plus a 3 CPU / 4Gi minimum exceed 4 CPU / 6Gi on both
    assert verdict.detail == ("queue resource quota insufficient: insufficient cpu, insufficient memory")


def test_gangs_admitted_in_one_cycle_count_against_the_next() -> None:
    nodes = [node("node-0", cpu="8", memory="16Gi")]
    result = plan(nodes, [ray_gang("ray-0"), ray_gang("ray-1")], [RAY_QUEUE])
    assert result.enqueued == ("ray-0",)
    assert bound_gangs(result) == ["ray-0"]
    verdict = result.verdict_for("ray-1")
    assert verdict is not None
    assert verdict.detail == ("queue resource quota insufficient: insufficient cpu, insufficient memory")


def test_gang_without_min_resources_is_admitted() -> None:
    result = plan([node("n1")], [gang("job", 1, phase="Pending")], [queue("default")])
    assert result.enqueued == ("job",)


@pytest.mark.parametrize("state", ["Closed", "Closing"])
def test_closed_and_closing_queues_admit_nothing(state: str) -> None:
    g = gang("job", 1, phase="Pending", min_resources=res("1"))
    result = plan([node("n1")], [g], [queue("default", state=state)])
    assert result.enqueued == ()
    verdict = result.verdict_for("job")
    assert verdict is not None
    assert verdict.reason == "QueueClosed"
    assert verdict.detail == f"queue default is {state}"


def test_gang_of_unknown_queue_is_not_admitted() -> None:
    result = plan([node("n1")], [gang("job", 1, phase="Pending", queue="nowhere")])
    assert result.enqueued == ()
    verdict = result.verdict_for("job")
    assert verdict is not None
    assert verdict.reason == "QueueNotFound"


@pytest.mark.parametrize(
    ("factor", "admitted"),
    [(None, False), (2.0, True), (0.5, False)],
    ids=["default-1.2", "factor-2", "below-1-means-1.2"],
)
def test_overcommit_bounds_admission_by_cluster_size(factor: float | None, admitted: bool) -> None:
    arguments = "" if factor is None else f", arguments: {{overcommit-factor: {factor}}}"
    conf = parse_conf(
        'actions: "enqueue"\ntiers:\n- plugins: [{name: gang}]\n'
        f"- plugins: [{{name: overcommit{arguments}}}]"
    )
    g = gang("job", 6, phase="Pending", min_resources=res("6"))
    result = plan([node("n1", cpu="4", memory="64Gi")], [g], conf=conf)
    assert (result.enqueued == ("job",)) is admitted
    if not admitted:
        verdict = result.verdict_for("job")
        assert verdict is not None
        assert verdict.reason == "ClusterOverused"
        assert verdict.detail == "resource in cluster is overused: overused cpu"


def test_job_without_pods_yet_is_explained_by_the_enqueue_event() -> None:
    g = gang("vcjob", tasks=[], min_member=2, phase="Pending", min_resources=res("64"))
    result = plan([node("n1")], [g], [queue("default", capability={"cpu": "8"})])
    verdict = result.verdict_for("vcjob")
    assert verdict is not None
    assert verdict.message == "queue resource quota insufficient: insufficient cpu"


def test_admitted_job_without_pods_yet_has_no_verdict() -> None:
    result = plan([node("n1")], [gang("vcjob", tasks=[], min_member=2, phase="Inqueue")])
    assert result.verdicts == ()


@pytest.mark.parametrize(("age", "admitted"), [(30, False), (600, True)], ids=["within-sla", "sla-expired"])
def test_sla_lets_a_gang_in_once_it_waited_too_long(age: int, admitted: bool) -> None:
    conf = parse_conf(
        'actions: "enqueue"\ntiers:\n- plugins: [{name: gang}, '
        "{name: sla, arguments: {sla-waiting-time: 5m}}]\n- plugins: [{name: overcommit}]"
    )
    g = gang("job", 1, phase="Pending", min_resources=res("64"), age=age)
    assert (plan([node("n1")], [g], conf=conf).enqueued == ("job",)) is admitted


def test_sla_never_overrides_queue_capability() -> None:
    conf = parse_conf(
        'actions: "enqueue"\ntiers:\n- plugins: [{name: gang}, '
        "{name: sla, arguments: {sla-waiting-time: 1s}}]\n- plugins: [{name: proportion}]"
    )
    g = gang("job", 1, phase="Pending", min_resources=res("8"), age=600)
    result = plan([node("n1")], [g], [queue("default", capability={"cpu": "2"})], conf=conf)
    assert result.enqueued == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("5m", timedelta(minutes=5)),
        ("1h30m", timedelta(minutes=90)),
        ("250ms", timedelta(0, 0.25)),
        (45, timedelta(seconds=45)),
        ("soon", None),
        ("0s", None),
    ],
    ids=["minutes", "hours-minutes", "milliseconds", "bare-seconds", "garbage", "zero"],
)
def test_sla_waiting_time_is_read_as_a_go_duration(text: object, expected: timedelta | None) -> None:
    assert parse_duration(text) == expected


def test_capability_of_an_ancestor_bounds_admission() -> None:
    queues = [queue("org", capability={"cpu": "2"}), queue("team", parent="org")]
    g = gang("job", 1, phase="Pending", queue="team", min_resources=res("3"))
    result = plan([node("n1", cpu="16")], [g], queues, conf=conf_with("predicates"))
    assert result.enqueued == ()


def test_gang_back_in_pending_after_losing_a_member_counts_only_what_it_lacks() -> None:
    # "ray-0" runs 2 of its 3 pods (its PodGroup fell back to Pending); its minimum asks 3 CPUs,
    # of which it holds 2. With 4 CPUs of capability, the 1 CPU it lacks fits: it is admitted and
    # its third pod placed. Counting its own 2 CPUs twice (2 held + 3 minimum) would refuse it.
    members = running(ray_gang("ray-0"), ["node-0"]).tasks
    lost_one = gang(
        "ray-0",
        tasks=(*members[:2], ray_gang("ray-0").tasks[2]),
        queue="kuberay-test-queue",
        phase="Pending",
        min_resources=res("3", "4Gi"),
        min_member=3,
    )
    result = plan([node("node-0", cpu="8", memory="16Gi")], [lost_one], [RAY_QUEUE])
    assert result.enqueued == ("ray-0",)
    assert bound_gangs(result) == ["ray-0"]


def test_a_plain_pods_podgroup_waits_for_its_pod_then_is_admitted_and_placed_at_once() -> None:
    empty = gang("podgroup-u1", tasks=[], phase="Pending")
    waiting = replace(snapshot([node("n1")], [empty]), unjoined=frozenset({empty.uid}))
    held = plan_cycle(waiting)
    assert held.enqueued == ()  # nothing decided
    assert held.verdicts == ()  # nothing said

    joined = plan_cycle(snapshot([node("n1")], [gang("podgroup-u1", 1, phase="Pending")]))
    assert joined.enqueued == (empty.uid,)
    assert [b.gang_uid for b in joined.binds] == [empty.uid]
