"""A queue's allowed namespaces (annotation phalanx.io/allowed-namespaces) hold in the scheduler too.

Admission refuses work from other namespaces; whatever got in anyway (admission bypassed, or the
annotation set after the gang arrived) is neither enqueued nor placed, and its verdict says why.
"""

from __future__ import annotations

import dataclasses

import pytest

from shared.volcano.keys import ALLOWED_NAMESPACES
from shared.volcano.queue_access import QUEUE_FORBIDS_NAMESPACE
from tests.unit.scheduler.builders import gang, node, placed, plan, queue

pytestmark = pytest.mark.unit

TEAM_QUEUE = queue("team", annotations={ALLOWED_NAMESPACES: "team-a, team-b"})


def in_namespace(name: str, namespace: str, phase: str = "Inqueue") -> object:
    return dataclasses.replace(gang(name, 2, queue="team", phase=phase), namespace=namespace)


@pytest.mark.parametrize("phase", ["Pending", "Inqueue"])
def test_a_gang_from_a_namespace_the_queue_does_not_allow_is_left_alone(phase: str) -> None:
    result = plan([node("n0", cpu="8")], [in_namespace("intruder", "other", phase)], [TEAM_QUEUE])
    assert placed(result) == {}
    assert result.enqueued == ()
    verdict = result.verdict_for("intruder")
    assert verdict is not None
    assert verdict.reason == QUEUE_FORBIDS_NAMESPACE
    assert "namespace `other` may not submit to queue `team`" in (verdict.message + verdict.detail)


def test_allowed_namespaces_and_open_queues_are_scheduled_as_before() -> None:
    gangs = [in_namespace("ours", "team-b", "Pending"), gang("anyone", 1, phase="Pending")]
    result = plan([node("n0", cpu="8")], gangs, [TEAM_QUEUE, queue("default")])
    assert sorted(result.enqueued) == ["anyone", "ours"]
