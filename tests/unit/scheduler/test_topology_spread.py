"""Hard pod topology spread constraints (PodTopologySpread, DoNotSchedule) as kube-scheduler
applies them: the skew against the least populated domain, nodes without the key, minDomains,
other schedulers' pods counted, soft constraints left to scoring (#16)."""

from __future__ import annotations

from typing import Any

import pytest

from services.scheduler.core.snapshot import OtherPod
from services.scheduler.core.spread import SPREAD, SPREAD_MISSING_LABEL
from tests.unit.scheduler.builders import conf_with, gang, node, placed, plan, request

pytestmark = pytest.mark.unit

CONF = conf_with("predicates", "nodeorder")
WEB = {"app": "web"}


def spread(max_skew: int = 1, key: str = "zone", **extra: Any) -> dict[str, Any]:
    return {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": WEB},
        **extra,
    }


def web(size: int, *constraints: dict[str, Any], **fields: Any) -> Any:
    task_fields = {"labels": WEB, "spread_constraints": tuple(constraints)}
    return gang("web", size, task_fields=task_fields, **fields)


ZONES = [node("a1", labels={"zone": "a"}), node("b1", labels={"zone": "b"}), node("c1")]


def test_pods_spread_over_zones_and_skip_nodes_without_the_key() -> None:
    others = (OtherPod(node="a1", request=request("1"), namespace="default", labels=WEB),)
    result = plan(ZONES, [web(3, spread())], conf=CONF, other_pods=others)
    assert sorted(placed(result).values()) == ["a1", "b1", "b1"]


def test_a_pod_that_would_break_the_skew_waits_with_kube_schedulers_reasons() -> None:
    others = (
        OtherPod(node="a1", request=request("1"), namespace="default", labels=WEB),
        OtherPod(node="a1", request=request("1"), namespace="default", labels=WEB),
    )
    # Zone b is full, so the one place that keeps the skew is out of reach.
    nodes = [node("a1", labels={"zone": "a"}), node("b1", cpu="500m", labels={"zone": "b"}), node("c1")]
    result = plan(nodes, [web(1, spread())], conf=CONF, other_pods=others)
    assert placed(result) == {}
    verdict = result.verdict_for("web")
    assert verdict is not None
    assert f"1 {SPREAD}" in verdict.message
    assert f"1 {SPREAD_MISSING_LABEL}" in verdict.message
    assert "1 Insufficient cpu" in verdict.message


def test_pods_of_other_namespaces_and_labels_do_not_count() -> None:
    others = (
        OtherPod(node="a1", request=request("1"), namespace="elsewhere", labels=WEB),
        OtherPod(node="a1", request=request("1"), namespace="default", labels={"app": "db"}),
    )
    result = plan(ZONES, [web(2, spread())], conf=CONF, other_pods=others)
    assert sorted(placed(result).values()) == ["a1", "b1"]


def test_min_domains_holds_the_floor_at_zero_while_domains_are_missing() -> None:
    # Two domains exist but three are asked for: the skew is measured against zero, so at
    # most maxSkew pods per zone.
    result = plan(ZONES, [web(3, spread(minDomains=3), min_member=2)], conf=CONF)
    assert sorted(placed(result).values()) == ["a1", "b1"]


def test_schedule_anyway_constraints_do_not_filter() -> None:
    soft = spread(whenUnsatisfiable="ScheduleAnyway")
    result = plan([node("c1", cpu="8")], [web(2, soft)], conf=CONF)
    assert sorted(placed(result).values()) == ["c1", "c1"]
