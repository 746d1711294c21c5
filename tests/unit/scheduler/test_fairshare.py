"""fairshare: usage over time, decayed with a half-life, orders queues across the hierarchy.

A queue that used more of the cluster yesterday yields to one that used less today, siblings are
compared with each other before their parents' usage counts (Slurm's fair tree), under reclaim the
queue furthest over its share over time gives back first, and without the plugin nothing changes.
"""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.scheduler.core import ConfError, SchedulerConf, parse_conf
from services.scheduler.core.build import build_context
from services.scheduler.core.fairshare import advance, decay, fair_keys, half_life
from services.scheduler.core.snapshot import QueueUsage
from services.scheduler.core.state import CycleState, QueueView
from services.scheduler.core.vectors import ResourceSpace
from tests.unit.scheduler import builders as b
from tests.unit.scheduler.builders import NOW, conf_with, gang, queue, request

pytestmark = pytest.mark.unit

DAY = 86400.0


def fairshare_conf(
    actions: str = "enqueue, allocate", half: str = "24h", share: str = "proportion"
) -> SchedulerConf:
    tier1 = "[{name: priority}, {name: gang}, {name: conformance}]"
    tier2 = f"[{{name: fairshare, arguments: {{halfLife: {half}}}}}, {{name: {share}}}, {{name: predicates}}]"
    return parse_conf(f'actions: "{actions}"\ntiers:\n- plugins: {tier1}\n- plugins: {tier2}\n')


def yesterday(**dominant: float) -> QueueUsage:
    """Usage recorded an hour ago: queue -> CPU share x seconds."""
    return QueueUsage(at=NOW - timedelta(hours=1), usage={q: {"cpu": v} for q, v in dominant.items()})


# --- the decay -------------------------------------------------------------------------------------
def test_usage_halves_every_half_life_when_nothing_is_held() -> None:
    assert decay(100.0, DAY, DAY, 0.0) == pytest.approx(50.0)
    assert decay(100.0, 2 * DAY, DAY, 0.0) == pytest.approx(25.0)


def test_a_queue_that_holds_a_share_forever_tends_to_share_times_half_life_over_ln2() -> None:
    assert decay(0.0, 100 * DAY, DAY, 0.5) == pytest.approx(0.5 * DAY / math.log(2))


def test_a_short_interval_adds_about_share_times_seconds() -> None:
    assert decay(0.0, 60.0, DAY, 1.0) == pytest.approx(60.0, rel=1e-3)


@given(
    previous=st.floats(0, 1e7),
    first=st.floats(0, 1e6),
    second=st.floats(0, 1e6),
    share=st.floats(0, 1),
    half=st.floats(60, 1e6),
)
def test_splitting_an_interval_changes_nothing(
    previous: float, first: float, second: float, share: float, half: float
) -> None:
    """Cycles come at any rhythm: two steps give what one step over the same time gives."""
    whole = decay(previous, first + second, half, share)
    split = decay(decay(previous, first, half, share), second, half, share)
    assert split == pytest.approx(whole, rel=1e-9, abs=1e-6)


@given(previous=st.floats(0, 1e7), elapsed=st.floats(0, 1e7), share=st.floats(0, 1))
def test_usage_stays_between_its_decayed_past_and_the_steady_state(
    previous: float, elapsed: float, share: float
) -> None:
    value = decay(previous, elapsed, DAY, share)
    steady = share * DAY / math.log(2)
    assert min(previous, steady) - 1e-6 <= value <= max(previous, steady) + 1e-6


def test_advance_keeps_queues_that_hold_nothing_and_starts_new_ones() -> None:
    before = QueueUsage(at=NOW - timedelta(days=1), usage={"old": {"cpu": 1000.0}})
    after = advance(before, NOW, DAY, {"new": {"cpu": 0.25}})
    assert after.at == NOW
    assert after.usage["old"]["cpu"] == pytest.approx(500.0)
    assert after.usage["new"]["cpu"] == pytest.approx(0.25 * DAY / (2 * math.log(2)))


def test_a_clock_that_goes_back_keeps_the_usage() -> None:
    before = QueueUsage(at=NOW, usage={"q": {"cpu": 10.0}})
    assert advance(before, NOW - timedelta(minutes=5), DAY, {"q": {"cpu": 1.0}}).usage == before.usage


# --- the fair tree ---------------------------------------------------------------------------------
def views(*queues: tuple[str, str, str]) -> dict[str, QueueView]:
    state = CycleState(ResourceSpace([]), [])
    result = {}
    for name, path, weights in queues:
        info = queue(
            name, annotations={"volcano.sh/hierarchy": path, "volcano.sh/hierarchy-weights": weights}
        )
        result[name] = QueueView(info=info, alloc=[0] * state.space.size, capability=[])
    return result


def test_siblings_are_compared_with_each_other_before_the_subtree_counts() -> None:
    queues = views(
        ("eng-a", "root/eng/eng-a", "1/1/1"),
        ("eng-b", "root/eng/eng-b", "1/1/1"),
        ("sci", "root/sci/sci", "1/1/1"),
    )
    keys = fair_keys(queues, {"eng-a": {"cpu": 10.0}, "eng-b": {"cpu": 50.0}, "sci": {"cpu": 30.0}})
    # eng used 60 against sci's 30: sci first, though eng-a alone used less than sci
    assert sorted(queues, key=lambda q: keys[q]) == ["sci", "eng-a", "eng-b"]


def test_weight_divides_usage_among_siblings() -> None:
    queues = views(("heavy", "root/heavy", "1/3"), ("light", "root/light", "1/1"))
    keys = fair_keys(queues, {"heavy": {"cpu": 60.0}, "light": {"cpu": 30.0}})
    # heavy used 2/3 of the usage with 3/4 of the weight; light 1/3 with 1/4
    assert keys["heavy"] < keys["light"]


def test_a_queue_counts_by_its_dominant_resource() -> None:
    queues = views(("gpu", "root/gpu", "1/1"), ("cpu", "root/cpu", "1/1"))
    keys = fair_keys(queues, {"gpu": {"cpu": 1.0, "nvidia.com/gpu": 90.0}, "cpu": {"cpu": 50.0}})
    assert keys["cpu"] < keys["gpu"]


@given(st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), st.floats(0, 1e6), min_size=4, max_size=4))
def test_among_equal_siblings_less_usage_never_comes_later(used: dict[str, float]) -> None:
    queues = views(*((name, f"root/{name}", "1/1") for name in used))
    keys = fair_keys(queues, {name: {"cpu": value} for name, value in used.items()})
    for one in used:
        for other in used:
            if used[one] < used[other]:
                assert keys[one] <= keys[other]


# --- in the cycle ----------------------------------------------------------------------------------
def contest(conf: SchedulerConf, usage: QueueUsage | None) -> list[str]:
    """Two queues hold nothing now; 5 CPUs are free, room for one of their gangs (no proportion:
    its deserved share of 2.5 CPUs would admit neither)."""
    gangs = [gang("from-a", 1, request("5"), queue="a"), gang("from-b", 1, request("5"), queue="b")]
    return b.bound_gangs(
        b.plan([b.node("n1", cpu="5")], gangs, [queue("a"), queue("b")], conf=conf, queue_usage=usage)
    )


def test_a_queue_that_used_more_yesterday_yields_first_today() -> None:
    conf = fairshare_conf(share="drf")
    assert contest(conf, yesterday(a=40000.0, b=1000.0)) == ["from-b"]
    assert contest(conf, yesterday(a=1000.0, b=40000.0)) == ["from-a"]


def test_without_the_plugin_volcanos_instantaneous_order_stays() -> None:
    instantaneous = conf_with("drf", "predicates", actions="enqueue, allocate")
    assert contest(instantaneous, yesterday(a=40000.0, b=1000.0)) == ["from-a"]  # by name, as before


def test_the_plan_carries_the_usage_advanced_to_now() -> None:
    holder = b.running(gang("hold", 1, request("2"), queue="a"), ["n1"])
    result = b.plan(
        [b.node("n1", cpu="4")], [holder], [queue("a")], conf=fairshare_conf(), queue_usage=yesterday(a=0.0)
    )
    assert result.queue_usage is not None
    assert result.queue_usage.at == NOW
    # an hour holding half the CPUs, barely decayed over a 24h half-life
    assert result.queue_usage.usage["a"]["cpu"] == pytest.approx(0.5 * 3600, rel=0.02)
    assert b.plan([b.node("n1", cpu="4")], [holder], [queue("a")]).queue_usage is None


def test_under_reclaim_the_queue_that_used_more_gives_back_first() -> None:
    conf = fairshare_conf(actions="enqueue, allocate, reclaim")
    queues = [queue("a"), queue("b"), queue("c")]
    # a and b each hold 3 of 6 CPUs, both above the 2 they deserve; c wants 1
    gangs = [
        b.running(gang("in-a", 3, request("1"), min_member=1, queue="a"), ["n1"]),
        b.running(gang("in-b", 3, request("1"), min_member=1, queue="b"), ["n1"]),
        gang("starving-c", 1, request("1"), queue="c"),
    ]
    for heavy in ("in-a", "in-b"):
        usage = yesterday(a=40000.0, b=1000.0) if heavy == "in-a" else yesterday(a=1000.0, b=40000.0)
        result = b.plan([b.node("n1", cpu="6")], gangs, queues, conf=conf, queue_usage=usage)
        assert [e.task_uid.rsplit("-worker-", 1)[0] for e in result.evictions] == [heavy]


@pytest.mark.parametrize("bad", ["yesterday", "0s", "-1h"])
def test_a_half_life_that_is_not_a_positive_duration_is_refused(bad: str) -> None:
    with pytest.raises(ConfError, match=r"halfLife.*fairshare"):
        fairshare_conf(half=bad)


def test_half_life_defaults_to_a_day() -> None:
    conf = conf_with("fairshare", "proportion")
    assert half_life(conf) == timedelta(hours=24)
    assert half_life(fairshare_conf(half="2h")) == timedelta(hours=2)


def test_the_volcano_parent_chain_is_the_tree_when_there_are_no_hierarchy_annotations() -> None:
    queues = [queue("eng"), queue("sci"), queue("eng-a", parent="eng"), queue("eng-b", parent="eng")]
    queues += [queue("sci-a", parent="sci")]
    usage = yesterday(**{"eng-a": 10.0, "eng-b": 50.0, "sci-a": 30.0})
    ctx, _ = build_context(b.snapshot([], [], queues, queue_usage=usage), fairshare_conf())
    keys = ctx.state.fair_keys
    # eng's leaves used 60 against sci's 30: sci-a first; inside eng, eng-a used less
    assert sorted(["eng-a", "eng-b", "sci-a"], key=lambda q: keys[q]) == ["sci-a", "eng-a", "eng-b"]
