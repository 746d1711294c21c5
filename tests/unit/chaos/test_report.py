"""The chaos report lists the faults and figures, and says plainly whether any invariant broke."""

from __future__ import annotations

import pytest

from phalanx.chaos.oracle import Verdict, Violation
from phalanx.chaos.report import render
from phalanx.chaos.runner import ChaosResult, ChaosSettings

pytestmark = pytest.mark.unit


def result(*violations: Violation) -> ChaosResult:
    return ChaosResult(
        ChaosSettings(seed=4, duration_s=60, gangs=3),
        Verdict(list(violations), {"binds": 9}),
        fault_log=["  5.0 s  kill:controller    SIGKILLed and restarted controller (4.0 s)"],
        samples=7,
        longest_across_controller_restart=("default/g", 1.25),
    )


def test_a_clean_run_reads_as_such_with_its_faults_and_figures() -> None:
    text = render(result())
    assert "kill:controller" in text
    assert "binds: 9" in text
    assert "across a controller restart (s): 1.250 default/g" in text
    assert "no violation" in text
    assert "VIOLATIONS" not in text


def test_every_violation_is_listed_by_invariant() -> None:
    text = render(result(Violation("I2", "node n1 held 9000 milli-cpu of 8000")))
    assert "VIOLATIONS (1):" in text
    assert "I2 node n1 held 9000 milli-cpu of 8000" in text


def test_the_report_says_which_stack_was_soaked() -> None:
    assert "stack: one of each service, one NATS server" in render(result())
    scaled = ChaosResult(
        ChaosSettings(seed=4, duration_s=60, gangs=3, scale=(("controller", 3), ("nats", 3))),
        Verdict([], {"binds": 9}),
    )
    assert "stack: controller=3, nats=3" in render(scaled)
