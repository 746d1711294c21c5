"""The controller's Events are aggregated and rate-limited as client-go's recorder does it."""

from __future__ import annotations

import pytest

from services.controller.event_recorder import AGGREGATE_SECONDS, BURST, REFILL_SECONDS, EventBook

pytestmark = pytest.mark.unit

KEY = ("pod-uid", "Warning", "FailedScheduling", "0/4 nodes are unavailable", "volcano")


def test_a_repeat_counts_up_on_the_event_already_written() -> None:
    book = EventBook()
    assert book.decide(KEY, 0.0).action == "create"
    book.written(KEY, "ns", "pod.1", 1, 0.0)

    again = book.decide(KEY, 10.0)
    assert (again.action, again.count, again.name) == ("update", 2, "pod.1")
    book.written(KEY, "ns", again.name, again.count, 10.0)
    assert book.decide(KEY, 20.0).count == 3


def test_another_message_or_a_late_repeat_is_a_new_event() -> None:
    book = EventBook()
    book.written(KEY, "ns", "pod.1", 1, 0.0)
    assert book.decide((*KEY[:3], "another message", KEY[4]), 1.0).action == "create"
    assert book.decide(KEY, AGGREGATE_SECONDS + 1).action == "create"


def test_a_flood_on_one_object_is_cut_off_then_trickles() -> None:
    book = EventBook()
    actions = [book.decide((*KEY[:3], f"message {i}", KEY[4]), 0.0).action for i in range(BURST + 5)]
    assert actions.count("create") == BURST
    assert actions[BURST:] == ["drop"] * 5
    # Another object has a bucket of its own ...
    assert book.decide(("other-uid", *KEY[1:]), 0.0).action == "create"
    # ... and this one gets one more event per refill period.
    assert book.decide(KEY, REFILL_SECONDS).action != "drop"
    assert book.decide(KEY, REFILL_SECONDS).action == "drop"
