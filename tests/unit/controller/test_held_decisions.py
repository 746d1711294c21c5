"""Decisions about another replica's jobs are kept for a while and handed over with their shard."""

from __future__ import annotations

from typing import Any

import pytest

from services.controller.app import HeldDecisions

pytestmark = pytest.mark.unit


def _decision(name: str) -> Any:
    return name  # HeldDecisions keeps whatever it is given; the event itself is not looked into


def test_the_decisions_of_a_taken_shard_come_back_once_in_their_order() -> None:
    held = HeldDecisions(seconds=60)
    held.keep(("ns", "a"), _decision("a-1"))
    held.keep(("ns", "b"), _decision("b-1"))
    held.keep(("ns", "a"), _decision("a-2"))
    assert held.take(lambda key: key == ("ns", "a")) == [(("ns", "a"), "a-1"), (("ns", "a"), "a-2")]
    assert held.take(lambda key: key == ("ns", "a")) == []
    assert held.take(lambda key: True) == [(("ns", "b"), "b-1")]


def test_decisions_older_than_the_window_are_dropped() -> None:
    held = HeldDecisions(seconds=0)
    held.keep(("ns", "a"), _decision("a-1"))
    held.keep(("ns", "a"), _decision("a-2"))  # keeping one drops what has outlived the window
    assert [event for _, event in held.take(lambda key: True)] == ["a-2"]
