"""fairshare's `deservedByUsage`: usage over time shapes proportion's deserved share.

A queue that used more than its weight over the half-life deserves less now, one that used less
deserves more, bounded, compared with its siblings down the fair tree; reclaim then takes from the
queue over its shaped share. Without the argument proportion's instantaneous shares stay.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.scheduler.core import ConfError, SchedulerConf, parse_conf
from services.scheduler.core.build import build_context
from services.scheduler.core.fairshare_deserved import bound, factor, weights
from services.scheduler.core.snapshot import QueueUsage
from tests.unit.scheduler import builders as b
from tests.unit.scheduler.builders import NOW, gang, queue, request

pytestmark = pytest.mark.unit

CPU = 0  # "cpu" sorts first in the cycle's resource space


def shaped_conf(
    arguments: str = "deservedByUsage: true", actions: str = "enqueue, allocate"
) -> SchedulerConf:
    tier1 = "[{name: priority}, {name: gang}, {name: conformance}]"
    fair = f"{{name: fairshare, arguments: {{halfLife: 24h, {arguments}}}}}"
    tier2 = f"[{fair}, {{name: drf}}, {{name: predicates}}, {{name: proportion}}]"
    return parse_conf(f'actions: "{actions}"\ntiers:\n- plugins: {tier1}\n- plugins: {tier2}\n')


def used_earlier(**cpu_seconds: float) -> QueueUsage:
    return QueueUsage(at=NOW - timedelta(hours=1), usage={q: {"cpu": v} for q, v in cpu_seconds.items()})


# --- the factor -------------------------------------------------------------------------------------
def test_a_queue_on_its_share_keeps_its_weight() -> None:
    assert factor((1.0,), 4.0) == 1.0
    assert factor((1.0, 1.0), 4.0) == 1.0


def test_less_usage_than_weight_raises_the_weight_and_more_lowers_it_within_the_bound() -> None:
    assert factor((0.0,), 4.0) == 2.0
    assert factor((2.0,), 4.0) == 0.5
    assert factor((5.0,), 4.0) == 0.25  # 2^-4 bounded to 1/4
    assert factor((0.0, 0.0, 0.0), 4.0) == 4.0  # 2^3 bounded to 4


@given(
    st.lists(st.floats(0, 50), min_size=1, max_size=4),
    st.lists(st.floats(0, 50), min_size=1, max_size=4),
    st.floats(1, 16),
)
def test_more_usage_at_every_level_never_deserves_more_and_stays_bounded(
    low: list[float], extra: list[float], limit: float
) -> None:
    high = [x + (extra[i] if i < len(extra) else 0.0) for i, x in enumerate(low)]
    assert factor(tuple(high), limit) <= factor(tuple(low), limit)
    assert 1 / limit - 1e-12 <= factor(tuple(high), limit) <= limit + 1e-12


def test_weights_multiply_the_configured_weight_and_leave_unknown_queues_alone() -> None:
    shaped = weights({"a": 2.0, "b": 1.0, "c": 3.0}, {"a": (2.0,), "b": (0.0,)}, 4.0)
    assert shaped == {"a": 1.0, "b": 2.0, "c": 3.0}


# --- in the cycle -----------------------------------------------------------------------------------
def deserved_cpu(conf: SchedulerConf, usage: QueueUsage | None) -> dict[str, int]:
    """Two equal queues both asking for the whole 8-CPU node: what each deserves of its CPUs."""
    gangs = [gang(f"from-{q}", 8, request("1"), min_member=1, queue=q) for q in ("a", "b")]
    snapshot = b.snapshot(
        [b.node("n1", cpu="8", memory="64Gi")], gangs, [queue("a"), queue("b")], queue_usage=usage
    )
    ctx, _ = build_context(snapshot, conf)
    result = {}
    for name, view in ctx.state.queues.items():
        if view.deserved is not None:
            result[name] = view.deserved[CPU]
    return result


def test_the_queue_that_used_more_deserves_less_now() -> None:
    shaped = deserved_cpu(shaped_conf(), used_earlier(a=40000.0, b=1000.0))
    assert shaped["a"] < 4000 < shaped["b"]
    assert shaped["a"] + shaped["b"] == pytest.approx(8000, abs=2)
    mirrored = deserved_cpu(shaped_conf(), used_earlier(a=1000.0, b=40000.0))
    assert mirrored["b"] < 4000 < mirrored["a"]


def test_without_deserved_by_usage_proportion_stays_instantaneous() -> None:
    usage = used_earlier(a=40000.0, b=1000.0)
    assert deserved_cpu(shaped_conf("deservedByUsage: false"), usage) == {"a": 4000, "b": 4000}
    ordering_only = parse_conf(
        'actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: priority}, {name: gang}]\n'
        "- plugins: [{name: fairshare}, {name: drf}, {name: predicates}, {name: proportion}]\n"
    )
    assert deserved_cpu(ordering_only, usage) == {"a": 4000, "b": 4000}


def test_the_bound_limits_how_far_the_share_moves() -> None:
    usage = used_earlier(a=1e7, b=0.0)
    tight = deserved_cpu(shaped_conf("deservedByUsage: true, deservedBound: 1.5"), usage)
    loose = deserved_cpu(shaped_conf("deservedByUsage: true, deservedBound: 8"), usage)
    assert loose["a"] < tight["a"] < 4000
    # a's weight at most 1.5x smaller and b's 1.5x larger: a keeps 1/(1 + 2.25) of the node
    assert tight["a"] == pytest.approx(8000 / 3.25, abs=2)


def test_under_reclaim_the_queue_over_its_shaped_share_gives_back() -> None:
    # a and b each hold 2 of 4 CPUs, exactly proportion's instantaneous share; b wants one more.
    gangs = [
        b.running(gang("in-a", 2, request("1"), min_member=1, queue="a"), ["n1"]),
        b.running(gang("in-b", 2, request("1"), min_member=1, queue="b"), ["n1"]),
        gang("more-b", 1, request("1"), queue="b"),
    ]
    queues = [queue("a"), queue("b")]
    usage = used_earlier(a=40000.0, b=1000.0)

    def evicted(conf: SchedulerConf) -> list[str]:
        result = b.plan([b.node("n1", cpu="4")], gangs, queues, conf=conf, queue_usage=usage)
        return [e.task_uid.rsplit("-worker-", 1)[0] for e in result.evictions]

    assert evicted(shaped_conf(actions="enqueue, allocate, reclaim")) == ["in-a"]
    instantaneous = shaped_conf("deservedByUsage: false", actions="enqueue, allocate, reclaim")
    assert evicted(instantaneous) == []


def test_siblings_are_compared_first_down_the_tree() -> None:
    queues = [queue("eng"), queue("sci"), queue("eng-a", parent="eng"), queue("eng-b", parent="eng")]
    queues += [queue("sci-a", parent="sci")]
    gangs = [gang(f"from-{q}", 12, request("1"), min_member=1, queue=q) for q in ("eng-a", "eng-b", "sci-a")]
    usage = used_earlier(**{"eng-a": 20000.0, "eng-b": 40000.0, "sci-a": 30000.0})
    snapshot = b.snapshot([b.node("n1", cpu="12", memory="64Gi")], gangs, queues, queue_usage=usage)
    ctx, _ = build_context(snapshot, shaped_conf())
    deserved = {n: q.deserved[CPU] for n, q in ctx.state.queues.items() if q.deserved is not None}
    # eng's leaves used 60 against sci's 30: sci-a deserves most though eng-a used less than it;
    # inside eng, eng-a (20) deserves more than eng-b (40)
    assert deserved["sci-a"] > deserved["eng-a"] > deserved["eng-b"]


def test_a_bound_may_be_written_as_a_string() -> None:
    assert bound(shaped_conf('deservedByUsage: true, deservedBound: "2"')) == 2.0
    assert bound(shaped_conf()) == 4.0


@pytest.mark.parametrize(
    "bad", ["deservedBound: 0.5", "deservedBound: soon", "deservedBound: true", "deservedByUsage: maybe"]
)
def test_a_bound_below_one_or_a_switch_that_is_not_a_boolean_is_refused(bad: str) -> None:
    with pytest.raises(ConfError, match=r"deserved.*fairshare"):
        shaped_conf(bad)
