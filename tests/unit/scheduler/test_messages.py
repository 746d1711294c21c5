"""The words users read: Volcano's Unschedulable message for gangs in every state.

Format (gang plugin, JobInfo.FitError): "<minAvailable - schedulable>/<tasks> tasks in gang
unschedulable: pod group is not ready, <status counts>, <min> minAvailable; Pending: <reason
counts>. Origin reason is <task>: <fit errors>", counts sorted as strings, as Go sorts them.
"""

from __future__ import annotations

import pytest

from tests.unit.scheduler.builders import conf_with, gang, node, plan, request, running, task

pytestmark = pytest.mark.unit

CONF = conf_with("predicates")


def test_gang_that_lost_a_pod_reports_running_and_pending_members() -> None:
    g = running(gang("job", 2, request("1")), ["n1"])
    lost = task("job-worker-2", request("8"))
    g = type(g)(**{**{s: getattr(g, s) for s in g.__slots__}, "tasks": (*g.tasks, lost), "min_member": 3})
    verdict = plan([node("n1", cpu="4")], [g], conf=CONF).verdict_for("job")
    assert verdict is not None
    assert verdict.message == (
        "1/3 tasks in gang unschedulable: pod group is not ready, 1 Pending, 2 Running, "
        "3 minAvailable; Pending: 1 Unschedulable. Origin reason is job-worker-2: "
        "0/1 nodes are unavailable: 1 Insufficient cpu."
    )


def test_counts_sort_as_strings_like_go() -> None:
    verdict = plan([node("n1", cpu="1")], [gang("job", 10, request("2"), min_member=3)], conf=CONF)
    found = verdict.verdict_for("job")
    assert found is not None
    assert found.message.startswith(
        "3/10 tasks in gang unschedulable: pod group is not ready, 10 Pending, 3 minAvailable; "
        "Pending: 10 Unschedulable. Origin reason is job-worker-0: "
    )


def test_gang_pipelined_on_room_being_freed_waits_nominated() -> None:
    leaving = task("old-worker-0", request("4"), node="n1", status="Releasing")
    old = gang("old", tasks=[leaving], phase="Running")
    result = plan([node("n1", cpu="4")], [old, gang("new", 1, request("2"))], conf=CONF)
    assert result.binds == ()
    assert [(n.task_uid, n.node) for n in result.nominations] == [("new-worker-0", "n1")]
    verdict = result.verdict_for("new")
    assert verdict is not None
    assert verdict.message == (
        "1/1 tasks in gang unschedulable: pod group is not ready, 1 Pipelined, 1 minAvailable"
    )


@pytest.mark.parametrize(
    ("reason", "nodes", "req"),
    [
        ("NotEnoughResources", [node("n1", cpu="1")], request("2")),
        ("TooManyPods", [node("n1", pods="0")], request("1")),
    ],
    ids=["resources", "pod-count"],
)
def test_structured_reason_names_the_dominant_cause(reason: str, nodes: list, req: object) -> None:  # type: ignore[type-arg]
    verdict = plan(nodes, [gang("job", 1, req)], conf=CONF).verdict_for("job")  # type: ignore[arg-type]
    assert verdict is not None
    assert verdict.reason == reason
