"""A chaos plan replays from its seed, fits its duration and always carries one fault of each kind."""

from __future__ import annotations

import pytest

from phalanx.chaos import plan

pytestmark = pytest.mark.unit


def test_the_same_seed_draws_the_same_run_and_another_seed_a_different_one() -> None:
    assert plan.gangs(7, 600, 40) == plan.gangs(7, 600, 40)
    assert plan.faults(7, 600, 30) == plan.faults(7, 600, 30)
    assert plan.gangs(7, 600, 40) != plan.gangs(8, 600, 40)


def test_gangs_are_submitted_in_order_within_the_run_with_every_pod_needed() -> None:
    gangs = plan.gangs(1, 100, 40)
    assert len(gangs) == 40
    assert [g.at for g in gangs] == sorted(g.at for g in gangs)
    assert all(0 <= g.at <= 90 for g in gangs)
    assert len({g.name for g in gangs}) == 40
    spec = gangs[0].manifest()["spec"]
    assert spec["minAvailable"] == spec["tasks"][0]["replicas"] == gangs[0].replicas


def test_even_a_short_run_gets_one_fault_of_every_kind() -> None:
    faults = plan.faults(3, 30, 20)
    assert sorted(f.kind for f in faults) == sorted(plan.FAULT_KINDS)


def test_a_long_run_repeats_the_faults_until_most_of_its_time_is_used() -> None:
    faults = plan.faults(3, 1800, 30)
    assert len(faults) > 3 * len(plan.FAULT_KINDS)
    assert [f.at for f in faults] == sorted(f.at for f in faults)
    assert faults[-1].at <= 1800 * 0.8 + 30 * 1.5


def test_a_non_positive_interval_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="every"):
        plan.faults(1, 60, 0)
