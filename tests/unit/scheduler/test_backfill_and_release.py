"""backfill places BestEffort pods; the optional release rule frees gangs stuck below minimum.

backfill (Volcano): pods without resource requests are skipped by allocate and placed by
backfill on any node that passes the filters, pod count included. The release rule (Phalanx,
off by default): a gang holding resources with fewer running members than its minimum for longer
than gang's `releaseBelowMinAfterSeconds` has its placed pods evicted and is reported released.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from services.scheduler.core import parse_conf
from services.scheduler.core.snapshot import OtherPod, TaskInfo
from shared.domain.resources import Resources
from tests.unit.scheduler.builders import (
    DEFAULT_CONF,
    NOW,
    conf_with,
    gang,
    node,
    placed,
    plan,
    request,
    running,
    task,
)

pytestmark = pytest.mark.unit

BEST_EFFORT = Resources({"pods": 1000})


@pytest.mark.parametrize(
    ("actions", "pods_free", "expected"),
    [
        ("enqueue, allocate, backfill", True, {"be-worker-0": "n1"}),
        ("enqueue, allocate", True, {}),
        ("enqueue, allocate, backfill", False, {}),
    ],
    ids=["backfill-places-best-effort", "allocate-skips-best-effort", "pod-count-still-applies"],
)
def test_best_effort_pods_are_placed_by_backfill(
    actions: str, pods_free: bool, expected: dict[str, str]
) -> None:
    others = () if pods_free else (OtherPod("n1", Resources({"pods": 1000})),)
    result = plan(
        [node("n1", pods="1")],
        [gang("be", 1, BEST_EFFORT)],
        conf=conf_with("predicates", actions=actions),
        other_pods=others,
    )
    assert placed(result) == expected


def test_backfill_fills_what_allocate_left() -> None:
    big = gang("big", 1, request("4"))
    small = gang("be", 2, BEST_EFFORT)
    result = plan([node("n1", cpu="4")], [big, small])
    assert sorted(placed(result)) == ["be-worker-0", "be-worker-1", "big-worker-0"]


RELEASE_CONF = parse_conf(
    """
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{name: priority}, {name: gang, arguments: {releaseBelowMinAfterSeconds: 300}}]
- plugins: [{name: predicates}]
"""
)


def _half_started(since_seconds: int | None) -> list:  # type: ignore[type-arg]
    g = running(gang("job", 3, request("2")), ["n1"])
    lost: TaskInfo = task("job-worker-2", request("2"))
    since = None if since_seconds is None else NOW - timedelta(seconds=since_seconds)
    return [
        type(g)(
            **{
                **{s: getattr(g, s) for s in g.__slots__},
                "tasks": (*g.tasks[:2], lost),
                "below_min_since": since,
            }
        )
    ]


@pytest.mark.parametrize(
    ("conf", "since", "released"),
    [
        (RELEASE_CONF, 600, True),
        (RELEASE_CONF, 60, False),
        (RELEASE_CONF, None, False),
        (DEFAULT_CONF, 6000, False),
    ],
    ids=["past-the-limit", "within-the-limit", "not-yet-tracked", "off-by-default"],
)
def test_gang_stuck_below_minimum_is_released_only_when_configured(
    conf: object, since: int | None, released: bool
) -> None:
    from services.scheduler.core import SchedulerConf

    assert isinstance(conf, SchedulerConf)
    result = plan([node("n1", cpu="4")], _half_started(since), conf=conf)
    assert (result.released == ("job",)) is released
    if released:
        assert sorted(e.task_uid for e in result.evictions) == ["job-worker-0", "job-worker-1"]
        assert {e.reason for e in result.evictions} == {"gang-release"}
        verdict = result.verdict_for("job")
        assert verdict is not None
        assert verdict.reason == "GangReleased"
        assert result.underfilled == ()
    else:
        assert result.evictions == ()
        assert result.underfilled == ("job",)
