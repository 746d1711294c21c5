"""Which queued decisions a newer one of the same gang makes not worth carrying out (issue #15)."""

from __future__ import annotations

from typing import Any

import pytest

from services.controller.core.superseded import supersedes
from shared.messages import decisions as msg

pytestmark = pytest.mark.unit

GANG = {"gang_uid": "g", "namespace": "default", "podgroup": "pg"}


def bind(uid: str, node: str = "n1") -> msg.PodBinding:
    return msg.PodBinding(uid=uid, namespace="default", name=uid, node=node)


def placed(cycle: int, *uids: str, epoch: int = 1, **gang: Any) -> msg.GangPlaced:
    return msg.GangPlaced(epoch=epoch, cycle=cycle, binds=tuple(bind(u) for u in uids), **{**GANG, **gang})


def enqueued(cycle: int, epoch: int = 1) -> msg.GangEnqueued:
    return msg.GangEnqueued(epoch=epoch, cycle=cycle, **GANG)


def unschedulable(cycle: int) -> msg.GangUnschedulable:
    return msg.GangUnschedulable(epoch=1, cycle=cycle, reason="r", condition_reason="r", message="m", **GANG)


def evicted(cycle: int) -> msg.PodsEvicted:
    eviction = msg.PodEviction(uid="a", namespace="default", name="a", node="n1", reason="preempt")
    return msg.PodsEvicted(epoch=1, cycle=cycle, evictions=(eviction,), **GANG)


def test_a_placement_decided_again_for_the_same_pods_supersedes_the_older_one() -> None:
    assert supersedes(placed(7, "a", "b"), placed(3, "a", "b"))
    assert supersedes(placed(1, "a", epoch=2), placed(9, "a", epoch=1)), "a newer epoch is newer"


def test_a_placement_of_only_some_of_the_pods_leaves_the_older_one_standing() -> None:
    # The rest of a gang too large to place at once: both decisions are to be carried out.
    assert not supersedes(placed(7, "c"), placed(3, "a", "b"))


def test_only_a_newer_decision_of_the_same_gang_supersedes() -> None:
    assert not supersedes(placed(3, "a"), placed(3, "a")), "the same decision redelivered"
    assert not supersedes(placed(2, "a"), placed(3, "a")), "an older one"
    assert not supersedes(placed(7, "a", gang_uid="other"), placed(3, "a")), "a PodGroup made again"


def test_admissions_and_verdicts_give_way_to_newer_ones() -> None:
    assert supersedes(enqueued(5), enqueued(2))
    assert supersedes(placed(5, "a"), enqueued(2)), "a placement admits the gang too"
    assert not supersedes(unschedulable(5), enqueued(2))
    assert supersedes(unschedulable(5), unschedulable(2))
    assert supersedes(placed(5, "a"), unschedulable(2))
    assert not supersedes(unschedulable(5), placed(2, "a"))


def test_evictions_are_never_skipped_and_never_skip_others() -> None:
    assert not supersedes(evicted(5), placed(2, "a"))
    assert not supersedes(placed(5, "a"), evicted(2))
    assert not supersedes(evicted(5), evicted(2))
