"""I3, I6 and I7 catch their violations in hand-made traces, and pass a clean run."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.chaos.invariants import FaultSpan, judge
from tests.unit.chaos.test_oracle import NODES, Trace

pytestmark = pytest.mark.unit

CAPPED = {"capped": {"cpu": 3000}}


def trace_of(trace: Trace, queues: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "records": trace.records,
        "minMember": {"default/g": 1, "default/h": 1},
        "queue": queues if queues is not None else {"default/g": "capped", "default/h": "capped"},
    }


def invariants_broken(trace: Trace, **kwargs: Any) -> set[str]:
    defaults: dict[str, Any] = {
        "allocatable": NODES,
        "capability": CAPPED,
        "submitted": ["default/g"],
        "job_phases": {"default/g": "Completed"},
    }
    queues = kwargs.pop("queues", None)
    verdict = judge(trace_of(trace, queues), **(defaults | kwargs))
    return {v.invariant for v in verdict.violations}


def test_a_clean_run_breaks_nothing_and_reports_its_queue_use() -> None:
    trace = Trace().gang_runs("g", ["a"], "n1").add("b", type_="ADDED", group="h", cpu=1000)
    trace.add("b", node="n2", group="h", cpu=1000).add("b", node="n2", phase="Succeeded", group="h", cpu=1000)
    verdict = judge(
        trace_of(trace),
        allocatable=NODES,
        capability=CAPPED,
        scheduled_events={"a": 1, "b": 1},
        submitted=["default/g"],
        job_phases={"default/g": "Completed"},
    )
    assert verdict.violations == []
    assert verdict.figures["peak queue use of its capability"] == 0.667
    assert verdict.figures["bound pods with no Scheduled Event (lost, tolerated)"] == 0


def test_two_gangs_of_one_capped_queue_running_at_once_over_its_capability_break_i3() -> None:
    trace = Trace().add("a", type_="ADDED").add("c", type_="ADDED", group="h")
    trace.add("a", node="n1").add("c", node="n2", group="h")  # 2000 + 2000 > 3000, on two nodes
    assert "I3" in invariants_broken(trace, quiescent=False)


def test_the_same_load_in_sequence_or_in_an_uncapped_queue_is_fine() -> None:
    in_turn = Trace().add("a", type_="ADDED").add("a", node="n1").add("a", node="n1", phase="Succeeded")
    in_turn.add("c", type_="ADDED", group="h").add("c", node="n2", group="h")
    assert "I3" not in invariants_broken(in_turn, quiescent=False)
    together = Trace().add("a", type_="ADDED").add("c", type_="ADDED", group="h")
    together.add("a", node="n1").add("c", node="n2", group="h")
    assert "I3" not in invariants_broken(together, quiescent=False, queues={})


def test_a_pod_created_again_under_its_name_while_its_first_had_not_failed_breaks_i6() -> None:
    trace = Trace().add("a1", type_="ADDED", pod="default/w-0").add("a1", type_="DELETED", pod="default/w-0")
    trace.add("a2", type_="ADDED", pod="default/w-0")
    assert "I6" in invariants_broken(trace, quiescent=False)


def test_a_pod_made_again_after_its_first_failed_is_the_job_restarting_it_not_a_duplicate() -> None:
    trace = Trace().add("a1", type_="ADDED", pod="default/w-0").add("a1", phase="Failed", pod="default/w-0")
    trace.add("a2", type_="ADDED", pod="default/w-0")
    assert "I6" not in invariants_broken(trace, quiescent=False)


def test_a_pod_scheduled_twice_by_events_breaks_i6_and_a_lost_event_is_only_counted() -> None:
    trace = Trace().gang_runs("g", ["a", "b"], "n1")
    verdict = judge(
        trace_of(trace, {}),
        allocatable=NODES,
        capability={},
        scheduled_events={"a": 2},
        submitted=["default/g"],
        job_phases={"default/g": "Completed"},
    )
    assert [v.invariant for v in verdict.violations] == ["I6"]
    assert verdict.figures["bound pods with no Scheduled Event (lost, tolerated)"] == 1


def test_a_pod_waiting_past_the_recovery_time_after_the_last_fault_healed_breaks_i7() -> None:
    # Trace records are one second apart: "a" is created at 1 s and bound at 200 s.
    trace = Trace().add("a", type_="ADDED", group="")
    for _ in range(198):
        trace.add("x", type_="MODIFIED", group="")
    trace.add("a", node="n1", group="")
    healed_early = [FaultSpan("kill:scheduler", 2.0, 10.0)]
    assert "I7" in invariants_broken(trace, faults=healed_early, submitted=[], queues={})
    healed_late = [FaultSpan("pause:postgres", 2.0, 150.0)]
    assert "I7" not in invariants_broken(trace, faults=healed_late, submitted=[], queues={})


def test_a_run_that_drains_long_after_its_last_fault_breaks_i7() -> None:
    trace = Trace().gang_runs("g", ["a", "b"], "n1")  # the last pod arrives at 2 s, ends at 6 s
    fault = [FaultSpan("restart:nats", 0.0, 0.5)]
    assert "I7" not in invariants_broken(trace, faults=fault, queues={})
    assert "I7" in invariants_broken(trace, faults=fault, queues={}, recover_s=3.0)  # ends 4 s after


def test_mid_run_skips_the_judgements_that_need_a_quiet_cluster() -> None:
    trace = Trace().add("a", type_="ADDED").add("a", node="n1")  # gang g partly bound, job running
    assert invariants_broken(trace, quiescent=False, submitted=["default/g"], job_phases={}) == set()


def test_work_arriving_after_the_last_fault_drains_from_its_arrival_not_from_the_fault() -> None:
    trace = Trace()
    for _ in range(300):
        trace.add("x", type_="MODIFIED", group="")  # 300 s of quiet
    trace.gang_runs("g", ["a", "b"], "n1")  # created at 301 s, done by 306 s
    fault = [FaultSpan("kill:watcher", 0.0, 1.0)]
    assert "I7" not in invariants_broken(trace, faults=fault, queues={})
