"""Queue fairness: proportion's deserved shares, drf's job order, and what users see of them.

proportion shares the cluster by weight ("water-filling"), capped by each queue's request and
capability and raised to its guarantee; an overused queue gets nothing more this cycle. drf
orders the gangs of a queue by dominant resource share, smaller first.
"""

from __future__ import annotations

from collections import Counter

import pytest

from services.scheduler.core import QueueInfo
from services.scheduler.core.build import build_context
from tests.unit.scheduler.builders import (
    conf_with,
    gang,
    node,
    placed,
    plan,
    queue,
    request,
    running,
    snapshot,
    task,
)

pytestmark = pytest.mark.unit

PROPORTION = conf_with("predicates", "proportion")


def deserved_cpu(queues: list[QueueInfo], requests: dict[str, int]) -> dict[str, int]:
    gangs = [gang(f"{name}-job", count, request("1", None), queue=name) for name, count in requests.items()]
    ctx, _ = build_context(snapshot([node("n1", cpu="12")], gangs, queues), PROPORTION)
    cpu = ctx.state.space.index["cpu"]
    result = {}
    for name, view in ctx.state.queues.items():
        assert view.deserved is not None
        result[name] = view.deserved[cpu] // 1000
    return result


@pytest.mark.parametrize(
    ("queues", "requests", "expected"),
    [
        (
            [queue("a"), queue("b", weight=2), queue("c")],
            {"a": 10, "b": 2, "c": 10},
            {"a": 5, "b": 2, "c": 5},
        ),
        ([queue("a"), queue("b", weight=3)], {"a": 12, "b": 12}, {"a": 3, "b": 9}),
        (
            [queue("a", guarantee={"cpu": "4"}), queue("b")],
            {"a": 1, "b": 12},
            {"a": 4, "b": 8},
        ),
        (
            [queue("a", capability={"cpu": "2"}), queue("b")],
            {"a": 12, "b": 12},
            {"a": 2, "b": 10},
        ),
    ],
    ids=["capped-by-request", "by-weight", "raised-to-guarantee", "capped-by-capability"],
)
def test_proportion_water_fills_deserved_shares(
    queues: list[QueueInfo], requests: dict[str, int], expected: dict[str, int]
) -> None:
    assert deserved_cpu(queues, requests) == expected


def test_queues_get_pods_in_proportion_to_their_weights() -> None:
    gangs = [gang(f"a{i}", 1, request("1", None), queue="a") for i in range(8)]
    gangs += [gang(f"b{i}", 1, request("1", None), queue="b") for i in range(8)]
    result = plan(
        [node("n1", cpu="8", memory="64Gi")],
        gangs,
        [queue("a"), queue("b", weight=3)],
        conf=PROPORTION,
    )
    per_queue = Counter(uid[0] for uid in placed(result))
    assert per_queue == {"a": 2, "b": 6}
    verdict = result.verdict_for("a7")
    assert verdict is not None
    assert verdict.reason == "QueueOverused"


@pytest.mark.parametrize(("tier2", "first"), [(("predicates", "drf"), "small"), (("predicates",), "large")])
def test_drf_serves_the_gang_with_the_smaller_dominant_share_first(
    tier2: tuple[str, ...], first: str
) -> None:
    def elastic(name: str, holding: int, age: int) -> object:
        g = running(gang(name, holding, request("1"), min_member=1, age=age), ["n1"])
        extra = task(f"{name}-worker-{holding}", request("1"))
        return type(g)(**{**{s: getattr(g, s) for s in g.__slots__}, "tasks": (*g.tasks, extra)})

    large, small = elastic("large", 3, age=100), elastic("small", 1, age=0)
    result = plan([node("n1", cpu="5", memory="64Gi")], [large, small], conf=conf_with(*tier2))  # type: ignore[list-item]
    assert list(placed(result)) == [f"{first}-worker-{3 if first == 'large' else 1}"]
