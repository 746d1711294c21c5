"""When the scheduler holds new decisions back because the controller lags (issue #15)."""

from __future__ import annotations

import pytest

from services.scheduler.decision_backlog import hold_back

pytestmark = pytest.mark.unit


def test_a_small_backlog_never_holds_back_whatever_the_rate() -> None:
    assert not hold_back(200, None, window=15, floor=256)
    assert not hold_back(256, 0.0, window=15, floor=256)


def test_a_backlog_the_controller_works_off_within_half_the_window_does_not_hold_back() -> None:
    assert not hold_back(700, 100.0, window=15, floor=256)  # 7 s of work, window 15 s


def test_a_backlog_that_would_outlast_half_the_window_holds_back() -> None:
    assert hold_back(1_000, 100.0, window=15, floor=256)  # 10 s: a new decision would reach it late


def test_a_backlog_not_being_drained_holds_back() -> None:
    assert hold_back(300, None, window=15, floor=256)
    assert hold_back(300, 0.0, window=15, floor=256)
