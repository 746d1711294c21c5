"""The oracle catches each invariant's violation in a hand-made trace, and passes a clean one."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.chaos.oracle import examine, longest_across

pytestmark = pytest.mark.unit

CPU = {"cpu": 4000, "memory": 8_000_000}
NODES = {"n1": CPU, "n2": CPU}


class Trace:
    """Builds simulator trace records with increasing resourceVersions, one second apart."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def add(
        self,
        uid: str,
        *,
        node: str = "",
        phase: str = "Pending",
        type_: str = "MODIFIED",
        group: str = "g",
        cpu: int = 2000,
        pod: str | None = None,
        reason: str = "",
    ) -> Trace:
        rv = len(self.records) + 1
        self.records.append(
            {
                "rv": rv,
                "at": float(rv),
                "type": type_,
                "uid": uid,
                "pod": pod or f"default/{uid}",
                "group": group,
                "node": node,
                "phase": phase,
                "reason": reason,
                "requests": {"cpu": cpu, "memory": 1_000_000},
            }
        )
        return self

    def gang_runs(self, group: str, uids: list[str], node: str) -> Trace:
        for uid in uids:
            self.add(uid, type_="ADDED", group=group)
        for uid in uids:
            self.add(uid, node=node, group=group)
        for uid in uids:
            self.add(uid, node=node, phase="Succeeded", group=group)
        return self


def verdict(trace: Trace, **kwargs: Any) -> Any:
    defaults: dict[str, Any] = {
        "allocatable": NODES,
        "min_member": {"default/g": 2, "default/h": 2},
        "submitted": ["default/g"],
        "job_phases": {"default/g": "Completed"},
    }
    return examine(trace.records, **(defaults | kwargs))


def invariants(trace: Trace, **kwargs: Any) -> set[str]:
    return {v.invariant for v in verdict(trace, **kwargs).violations}


def test_a_clean_run_has_no_violation_and_its_figures() -> None:
    trace = Trace().gang_runs("g", ["a", "b"], "n1").gang_runs("h", ["c", "d"], "n1")
    result = verdict(
        trace,
        submitted=["default/g", "default/h"],
        job_phases={"default/g": "Completed", "default/h": "Completed"},
    )
    assert result.ok, result.violations
    assert result.figures["binds"] == 4
    assert result.figures["gangs bound"] == 2
    assert result.figures["longest partial gang (s)"] == 1.0  # a's bind to b's, one record apart
    assert result.figures["peak node use"] == 1.0
    assert result.figures["jobs by phase"] == {"Completed": 2}


def test_a_pod_moved_to_a_second_node_breaks_i1() -> None:
    trace = Trace().add("a", node="n1").add("a", node="n2")
    assert "I1" in invariants(trace, min_member={"default/g": 1})


def test_binding_the_same_node_again_is_not_a_second_bind() -> None:
    trace = Trace().add("a", node="n1").add("a", node="n1", phase="Running").add("b", node="n1")
    assert verdict(trace).figures["binds"] == 2
    assert "I1" not in invariants(trace)


def test_a_node_over_committed_at_one_instant_breaks_i2_even_if_the_kubelet_refuses_it() -> None:
    trace = (
        Trace()
        .add("a", node="n1", cpu=3000, group="")
        .add("b", node="n1", cpu=2000, group="")
        .add("b", node="n1", cpu=2000, group="", phase="Failed", reason="OutOfcpu")
    )
    result = verdict(trace, submitted=[])
    assert {v.invariant for v in result.violations} == {"I2"}
    assert result.figures["pods refused by a kubelet (OutOf*)"] == 1


def test_capacity_freed_by_a_finished_or_deleted_pod_can_be_reused() -> None:
    trace = (
        Trace()
        .add("a", node="n1", cpu=3000, group="")
        .add("a", node="n1", cpu=3000, group="", phase="Succeeded")
        .add("b", node="n1", cpu=3000, group="")
        .add("b", node="n1", cpu=3000, group="", type_="DELETED")
        .add("c", node="n1", cpu=3000, group="")
    )
    assert invariants(trace, submitted=[]) == set()


def test_a_gang_left_below_min_member_breaks_i4_only_at_quiescence() -> None:
    trace = Trace().add("a", type_="ADDED").add("b", type_="ADDED").add("a", node="n1")
    assert "I4" in invariants(trace)
    mid_run = verdict(trace, quiescent=False)
    assert mid_run.ok
    assert mid_run.figures["longest partial gang"] == "default/g"


def test_a_deleted_member_still_counts_as_having_been_bound() -> None:
    trace = Trace().gang_runs("g", ["a", "b"], "n1").add("a", type_="DELETED").add("b", type_="DELETED")
    assert "I4" not in invariants(trace)


def test_a_job_gone_or_not_finished_breaks_i5() -> None:
    trace = Trace().gang_runs("g", ["a", "b"], "n1")
    lost = verdict(trace, submitted=["default/g", "default/x"])
    assert [v.detail for v in lost.violations] == ["job default/x was submitted and is gone (lost)"]
    running = verdict(trace, job_phases={"default/g": "Running"})
    assert [v.invariant for v in running.violations] == ["I5"]
    assert running.figures["jobs by phase"] == {"Running": 1}


def test_records_are_replayed_in_resource_version_order_whatever_order_they_arrive_in() -> None:
    trace = (
        Trace()
        .add("a", node="n1", cpu=3000, group="")
        .add("a", node="n1", cpu=3000, group="", phase="Succeeded")
    )
    trace.add("b", node="n1", cpu=3000, group="")
    shuffled = Trace()
    shuffled.records = list(reversed(trace.records))
    assert invariants(shuffled, submitted=[]) == set()


def test_the_longest_partial_gang_across_a_restart_counts_only_windows_that_overlap_it() -> None:
    trace = Trace().add("a", node="n1").add("x", node="n1", group="h").add("b", node="n1")
    trace.add("y", node="n1", group="h")
    windows = verdict(trace).windows  # g: 1 -> 3 (2 s), h: 2 -> 4 (2 s)
    assert longest_across(windows, [(3.5, 3.8)], end=4.0) == ("default/h", 2.0)
    assert longest_across(windows, [(10.0, 11.0)], end=4.0) == ("", 0.0)
