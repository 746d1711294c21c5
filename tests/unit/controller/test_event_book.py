"""The controller's Events are correlated as client-go's recorder does it: repeats counted on one
Event, similar events combined, floods cut off, and nothing remembered without bound."""

from __future__ import annotations

import pytest

from services.controller.core.event_correlator import (
    AGGREGATE_MAX_MESSAGES,
    AGGREGATE_SECONDS,
    BURST,
    COMBINED_PREFIX,
    REFILL_SECONDS,
    REMEMBERED,
    EventBook,
    EventFacts,
)

pytestmark = pytest.mark.unit

FACTS = EventFacts("pod-uid", "Warning", "FailedScheduling", "0/4 nodes are unavailable", "volcano")


def said(message: str, involved: str = "pod-uid") -> EventFacts:
    return EventFacts(involved, FACTS.type, FACTS.reason, message, FACTS.component)


def test_a_repeat_counts_up_on_the_event_already_written() -> None:
    book = EventBook()
    first = book.decide(FACTS, 0.0)
    assert (first.action, first.message) == ("create", FACTS.message)
    book.written(first, "pod.1", 0.0)

    again = book.decide(FACTS, 10.0)
    assert (again.action, again.count, again.name) == ("update", 2, "pod.1")
    book.written(again, again.name, 10.0)
    assert book.decide(FACTS, 20.0).count == 3


def test_another_message_or_a_late_repeat_is_a_new_event() -> None:
    book = EventBook()
    book.written(book.decide(FACTS, 0.0), "pod.1", 0.0)
    assert book.decide(said("another message"), 1.0).action == "create"
    assert book.decide(FACTS, AGGREGATE_SECONDS + 1).action == "create"


def test_an_event_whose_write_failed_is_created_next_time() -> None:
    book = EventBook()
    book.decide(FACTS, 0.0)  # decided, never written (the API refused it)
    assert book.decide(FACTS, 1.0).action == "create"


def test_a_gone_event_starts_a_new_series() -> None:
    book = EventBook()
    book.written(book.decide(FACTS, 0.0), "pod.1", 0.0)
    again = book.decide(FACTS, 1.0)
    book.forget(again)  # the PATCH found no Event: it expired
    assert book.decide(FACTS, 2.0).action == "create"


def test_similar_events_on_one_object_are_combined_into_one_counted_event() -> None:
    """client-go's aggregator: the tenth different message of one reason on one object, and every
    one after it, is one Event saying "(combined from similar events)", counted up."""
    book = EventBook()
    decisions = []
    for number in range(AGGREGATE_MAX_MESSAGES + 2):
        decision = book.decide(said(f"0/{number} nodes are unavailable"), float(number))
        book.written(decision, decision.name or f"pod.{number}", float(number))
        decisions.append(decision)
    separate, combined = decisions[: AGGREGATE_MAX_MESSAGES - 1], decisions[AGGREGATE_MAX_MESSAGES - 1 :]
    assert [d.action for d in separate] == ["create"] * (AGGREGATE_MAX_MESSAGES - 1)
    assert [(d.action, d.count) for d in combined] == [("create", 1), ("update", 2), ("update", 3)]
    assert combined[-1].message == COMBINED_PREFIX + "0/11 nodes are unavailable"
    assert [d.name for d in combined[1:]] == ["pod.9", "pod.9"]  # the combined Event, counted up
    # A recent message seen before still counts up on its own Event; another object's is its own.
    assert book.decide(said("0/5 nodes are unavailable"), 12.0).action == "update"
    assert book.decide(said("0/0 nodes", involved="other-uid"), 12.0).message == "0/0 nodes"


def test_combining_stops_once_the_object_was_quiet_for_the_aggregation_period() -> None:
    book = EventBook()
    for number in range(AGGREGATE_MAX_MESSAGES):
        book.decide(said(f"message {number}"), 0.0)
    assert book.decide(said("fresh"), AGGREGATE_SECONDS + 1).message == "fresh"


def test_a_flood_on_one_object_is_cut_off_then_trickles() -> None:
    book = EventBook()
    actions = [book.decide(said(f"message {i}"), 0.0).action for i in range(BURST + 5)]
    assert actions.count("drop") == 5
    assert actions[BURST:] == ["drop"] * 5
    # Another object has a bucket of its own ...
    assert book.decide(said("x", involved="other-uid"), 0.0).action == "create"
    # ... and this one gets one more event per refill period.
    assert book.decide(FACTS, REFILL_SECONDS).action != "drop"
    assert book.decide(FACTS, REFILL_SECONDS).action == "drop"


def test_the_book_forgets_the_least_recently_used_past_its_bound() -> None:
    """One Scheduled Event per pod, for ever more pods: what is remembered stays bounded."""
    book = EventBook()
    for number in range(REMEMBERED + 100):
        facts = EventFacts(f"pod-{number}", "Normal", "Scheduled", "assigned", "volcano")
        book.written(book.decide(facts, 0.0), f"pod-{number}.1", 0.0)
    sizes = (len(book._series), len(book._aggregates), len(book._buckets))
    assert sizes == (REMEMBERED, REMEMBERED, REMEMBERED)
    newest = EventFacts(f"pod-{REMEMBERED + 99}", "Normal", "Scheduled", "assigned", "volcano")
    assert book.decide(newest, 1.0).action == "update"
    assert (
        book.decide(EventFacts("pod-0", "Normal", "Scheduled", "assigned", "volcano"), 1.0).action == "create"
    )
