"""Reservation backfill: the first blocked gang's reservation, what may start around it, predictions.

The cluster in most tests: four 4-cpu nodes; `long` runs on n1 and n2 until +90 s, `short` on n3
until +30 s, n4 is free. `big` (4 x 4 cpu) is first in order and cannot start, so it is reserved
all four nodes at +90 s; later gangs may start only if they end by then or stay off its nodes.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from services.scheduler.core import ConfError, parse_conf
from services.scheduler.core.estimates import EXPECTED_RUNTIME, PREDICTED_START, format_instant
from services.scheduler.core.snapshot import TaskInfo
from tests.unit.scheduler.builders import NOW, gang, node, placed, plan, request, running

pytestmark = pytest.mark.unit


def backfill_conf(mode: str = "backfill", depth: int = 1, extra: str = "") -> object:
    return parse_conf(
        f"""
actions: "enqueue, allocate, backfill"
tiers:
- plugins: [{{name: priority}}, {{name: gang}}, {{name: conformance}}]
- plugins: [{{name: predicates}}, {{name: nodeorder}}]
configurations:
- name: backfill
  arguments: {{reservation: {mode}, reservationDepth: {depth}{extra}}}
"""
    )


def timed(name: str, size: int, cpu: str, seconds: float | None, *, age: int = 0, **fields: object):  # type: ignore[no-untyped-def]
    annotations = {EXPECTED_RUNTIME: f"{seconds}s"} if seconds is not None else {}
    annotations.update(fields.pop("annotations", {}))  # type: ignore[arg-type]
    return gang(name, size, request(cpu, "1Gi"), age=age, annotations=annotations, **fields)


def started(g, nodes, seconds_ago: float):  # type: ignore[no-untyped-def]
    placed_gang = running(g, nodes)
    tasks = tuple(
        TaskInfo(
            **{**{s: getattr(t, s) for s in t.__slots__}, "started": NOW - timedelta(seconds=seconds_ago)}
        )
        for t in placed_gang.tasks
    )
    return type(placed_gang)(
        **{**{s: getattr(placed_gang, s) for s in placed_gang.__slots__}, "tasks": tasks}
    )


NODES = [node(f"n{i}", cpu="4", memory="16Gi") for i in range(1, 5)]


def cluster(*waiting):  # type: ignore[no-untyped-def]
    return [
        started(timed("long", 2, "4", 100, age=500), ["n1", "n2"], 10),
        started(timed("short", 1, "4", 30, age=400), ["n3"], 0),
        timed("big", 4, "4", 50, age=300),
        *waiting,
    ]


def test_a_short_gang_starts_on_a_reserved_node_and_a_long_one_waits() -> None:
    waiting = (timed("slow", 1, "4", 200, age=200), timed("quick", 1, "4", 60, age=100))
    result = plan(NODES, cluster(*waiting), conf=backfill_conf())
    assert placed(result) == {"quick-worker-0": "n4"}
    slow = result.verdict_for("slow")
    assert slow is not None
    assert slow.reason == "Reserved"
    assert "would delay the reservation of default/big" in slow.message
    big = next(p for p in result.predictions if p.gang_uid == "big")
    assert big.reserved
    assert big.start == NOW + timedelta(seconds=90)


def test_without_configuration_volcano_lets_the_first_gang_that_fits_start() -> None:
    from tests.unit.scheduler.builders import DEFAULT_CONF

    result = plan(NODES, cluster(timed("slow", 1, "4", 200, age=100)), conf=DEFAULT_CONF)
    assert placed(result) == {"slow-worker-0": "n4"}
    assert result.predictions == ()


def test_a_gang_without_estimate_may_use_only_unreserved_nodes() -> None:
    nodes = [*NODES, node("n5", cpu="4", memory="16Gi")]
    result = plan(nodes, cluster(timed("unknown", 1, "4", None, age=100)), conf=backfill_conf())
    assert placed(result) == {"unknown-worker-0": "n5"}


def test_strict_mode_starts_nothing_behind_the_blocked_gang() -> None:
    result = plan(NODES, cluster(timed("quick", 1, "4", 60, age=200)), conf=backfill_conf("strict"))
    assert placed(result) == {}
    quick = result.verdict_for("quick")
    assert quick is not None
    assert "strict order: waits behind default/big" in quick.message


def test_predictions_stack_each_gang_after_those_before_it() -> None:
    result = plan(NODES, cluster(timed("slow", 1, "4", 200, age=100)), conf=backfill_conf())
    starts = {p.gang_uid: p.start for p in result.predictions}
    # big runs 90..140 on all four nodes; slow fits only after that.
    assert starts == {"big": NOW + timedelta(seconds=90), "slow": NOW + timedelta(seconds=140)}
    verdict = result.verdict_for("slow")
    assert verdict is not None
    assert verdict.predicted_start == format_instant(NOW + timedelta(seconds=140))
    assert verdict.message.endswith(f"expected to start at {verdict.predicted_start}")


def test_an_overrunning_gang_pushes_the_reservation_back() -> None:
    gangs = cluster()
    gangs[0] = started(timed("long", 2, "4", 100, age=500), ["n1", "n2"], 150)  # 50 s over
    result = plan(NODES, gangs, conf=backfill_conf())
    big = next(p for p in result.predictions if p.gang_uid == "big")
    assert big.start == NOW + timedelta(seconds=30)  # short ends at +30; long 10 s later each cycle
    gangs[1] = started(timed("short", 1, "4", 30, age=400), ["n3"], 25)
    result = plan(NODES, gangs, conf=backfill_conf())
    big = next(p for p in result.predictions if p.gang_uid == "big")
    assert big.start == NOW + timedelta(seconds=10)  # the overrun rule: 10% of 100 s


def test_no_reservation_when_the_room_is_held_by_work_without_estimate() -> None:
    gangs = [
        started(timed("forever", 2, "4", None, age=500), ["n1", "n2"], 10),
        timed("big", 4, "4", 50, age=300),
    ]
    gangs.append(timed("slow", 1, "4", 500, age=100))
    result = plan(NODES, gangs, conf=backfill_conf())
    assert placed(result) == {"slow-worker-0": "n3"}
    big = next(p for p in result.predictions if p.gang_uid == "big")
    assert big.start is None
    assert not big.reserved


def test_an_immaterial_change_keeps_the_published_prediction() -> None:
    published = NOW + timedelta(seconds=88)  # 2 s off the new +90 s: within 10% of the wait
    gangs = cluster()
    gangs[2] = timed("big", 4, "4", 50, age=300, annotations={PREDICTED_START: format_instant(published)})
    result = plan(NODES, gangs, conf=backfill_conf())
    big = next(p for p in result.predictions if p.gang_uid == "big")
    assert big.start == NOW + timedelta(seconds=90)
    assert big.published == published
    gangs[2] = timed("big", 4, "4", 50, age=300, annotations={PREDICTED_START: format_instant(NOW)})
    result = plan(NODES, gangs, conf=backfill_conf())
    assert next(p for p in result.predictions if p.gang_uid == "big").published == NOW + timedelta(seconds=90)


def test_depth_two_protects_the_second_blocked_gang_too() -> None:
    waiting = [timed("second", 2, "4", 50, age=250), timed("filler", 1, "4", 150, age=100)]
    one = plan(NODES, cluster(*waiting), conf=backfill_conf(depth=1))
    two = plan(NODES, cluster(*waiting), conf=backfill_conf(depth=2))
    # second (2 x 4 cpu) cannot start now; with depth 2 it is reserved n3 and n4 from +30 s.
    assert placed(one) == {}
    assert placed(two) == {}
    assert [p.reserved for p in two.predictions] == [True, True, False]


def test_a_default_runtime_stands_in_for_a_missing_estimate() -> None:
    unknown = started(timed("forever", 2, "4", None, age=500), ["n1", "n2"], 10)
    conf = backfill_conf(extra=", defaultRuntime: 1m")
    result = plan(NODES, [unknown, timed("big", 4, "4", 50, age=300)], conf=conf)
    big = next(p for p in result.predictions if p.gang_uid == "big")
    assert big.reserved
    assert big.start == NOW + timedelta(seconds=50)  # started 10 s ago, planned for 60 s


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("{reservation: sometimes}", "argument 'reservation' of action 'backfill' must be one of"),
        ("{reservationDepth: -1}", "argument 'reservationDepth' of action 'backfill' must be a whole number"),
        ("{predictedGangs: many}", "argument 'predictedGangs' of action 'backfill' must be a whole number"),
        ("{defaultRuntime: forever}", "argument 'defaultRuntime' of action 'backfill' must be a duration"),
    ],
)
def test_bad_configuration_names_the_argument_and_the_rule(arguments: str, message: str) -> None:
    text = f'actions: "allocate"\ntiers: []\nconfigurations:\n- name: backfill\n  arguments: {arguments}\n'
    with pytest.raises(ConfError, match=message):
        parse_conf(text)
