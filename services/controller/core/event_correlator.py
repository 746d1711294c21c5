"""Pure: which write an Event needs, decided as client-go's EventCorrelator decides it.

The recorder (services/controller/event_recorder.py) asks `EventBook.decide` for each event it is
about to write, and tells it what it wrote. Three steps, in client-go's order (tools/record/events_cache.go):
- the spam filter: each object and source get a token bucket (`BURST` events, then one per
  `REFILL_SECONDS`), so a gang that waits for an hour cannot flood the API with Events;
- the aggregator: once an object has had `AGGREGATE_MAX_MESSAGES` different messages of one
  type and reason within `AGGREGATE_SECONDS`, the next ones are one Event whose message says
  "(combined from similar events): ..." (a FailedScheduling whose reason keeps changing);
- the series: the same event again within `AGGREGATE_SECONDS` updates the Event already written,
  its `count`, `lastTimestamp` and message, instead of adding one; `kubectl describe` shows
  "x3 over 2m".
Plain data and a monotonic time passed in; every table is bounded (least recently used dropped,
`REMEMBERED` entries, client-go's LRU size). After a restart, the first repeat of an event
creates a new Event, as in client-go.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Literal, TypeVar

AGGREGATE_SECONDS = 600.0  # client-go's event cache keeps a series this long
AGGREGATE_MAX_MESSAGES = 10  # different messages of one reason on one object before combining
COMBINED_PREFIX = "(combined from similar events): "
BURST = 25  # client-go's spam filter: events per object and source at once ...
REFILL_SECONDS = 300.0  # ... then one more every five minutes
REMEMBERED = 4096  # series, aggregates and buckets kept; the least recently used are forgotten

K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class EventFacts:
    """One event to record: its object (uid, or namespace/name), type, reason, message, source."""

    involved: str
    type: str
    reason: str
    message: str
    component: str

    @property
    def series(self) -> tuple[str, str, str, str, str]:
        return (self.involved, self.type, self.reason, self.message, self.component)


@dataclass(slots=True)
class _Series:
    name: str  # the Event object's name, once written
    count: int
    last: float


@dataclass(slots=True)
class _Aggregate:
    messages: dict[str, None] = field(default_factory=dict)  # insertion-ordered set
    last: float = 0.0


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


@dataclass(frozen=True, slots=True)
class Decision:
    action: Literal["create", "update", "drop"]
    count: int = 1
    name: str = ""  # the Event to update
    message: str = ""  # what the Event says: the event's, or the combined one
    series: tuple[str, str, str, str, str] = ("", "", "", "", "")  # what `written` is told


class EventBook:
    """Which write an event needs: a new Event, a count on the one written, or none (spam)."""

    def __init__(self) -> None:
        self._series: OrderedDict[tuple[str, str, str, str, str], _Series] = OrderedDict()
        self._aggregates: OrderedDict[tuple[str, str, str, str], _Aggregate] = OrderedDict()
        self._buckets: OrderedDict[tuple[str, str], _Bucket] = OrderedDict()

    def decide(self, facts: EventFacts, now: float) -> Decision:
        if not self._take_token((facts.involved, facts.component), now):
            return Decision("drop")
        message, series_key = self._aggregate(facts, now)
        series = self._series.get(series_key)
        if series is not None and series.name and now - series.last < AGGREGATE_SECONDS:
            self._series.move_to_end(series_key)
            return Decision("update", series.count + 1, series.name, message, series_key)
        return Decision("create", 1, "", message, series_key)

    def written(self, decision: Decision, name: str, now: float) -> None:
        """`decision` was carried out: the Event `name` now has `decision.count`."""
        _remember(self._series, decision.series, _Series(name, decision.count, now))

    def forget(self, decision: Decision) -> None:
        """The Event of `decision`'s series is gone (expired or deleted): start a new one."""
        self._series.pop(decision.series, None)

    def _aggregate(self, facts: EventFacts, now: float) -> tuple[str, tuple[str, str, str, str, str]]:
        """client-go's EventAggregator: the message and series key this event is written under."""
        key = (facts.involved, facts.type, facts.reason, facts.component)
        record = self._aggregates.get(key)
        if record is None or now - record.last > AGGREGATE_SECONDS:
            record = _Aggregate()
        record.messages[facts.message] = None
        record.last = now
        if len(record.messages) < AGGREGATE_MAX_MESSAGES:
            _remember(self._aggregates, key, record)
            return facts.message, facts.series
        del record.messages[next(iter(record.messages))]  # room for the next different message
        _remember(self._aggregates, key, record)
        combined = (facts.involved, facts.type, facts.reason, "", facts.component)
        return COMBINED_PREFIX + facts.message, combined

    def _take_token(self, source: tuple[str, str], now: float) -> bool:
        bucket = self._buckets.get(source)
        if bucket is None:
            bucket = _Bucket(float(BURST), now)
        _remember(self._buckets, source, bucket)
        bucket.tokens = min(float(BURST), bucket.tokens + (now - bucket.at) / REFILL_SECONDS)
        bucket.at = now
        if bucket.tokens < 1:
            return False
        bucket.tokens -= 1
        return True


def _remember(table: OrderedDict[K, V], key: K, value: V) -> None:
    table[key] = value
    table.move_to_end(key)
    while len(table) > REMEMBERED:
        table.popitem(last=False)
