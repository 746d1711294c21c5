"""Prometheus metrics every service shares, and the text that `/metrics` serves (runtime.py).

Two kinds of names sit side by side:
- Volcano's (`volcano_*`), with Volcano's types, labels and buckets, so that dashboards and alerts
  written for Volcano work unchanged; the scheduler and controller define theirs in their own
  `metrics.py`.
- Phalanx's own (`phalanx_*`), defined here when every service has them: the bus consumers'
  redeliveries and dead letters per stream, the outbox's depth and age.

Volcano names two of its counters without the `_total` suffix (`volcano_total_preemption_attempts`,
`volcano_job_completed_phase_count`); prometheus_client would append one. `BareCounter` keeps the
name as Volcano writes it, and `exposition()` labels its family with that name.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

from prometheus_client import REGISTRY, Counter, Gauge, disable_created_metrics, generate_latest
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

# `_created` series double the output and no dashboard of ours or Volcano's reads them.
disable_created_metrics()  # type: ignore[no-untyped-call]

_BARE_NAMES: set[str] = set()


class BareCounter(Collector):
    """A counter exposed under exactly `name`, with no `_total` appended (Volcano's spelling)."""

    def __init__(self, name: str, documentation: str, labelnames: Sequence[str] = ()) -> None:
        self.name = name
        self._documentation = documentation
        self._labelnames = tuple(labelnames)
        self._values: dict[tuple[str, ...], float] = {}
        self._lock = threading.Lock()
        _BARE_NAMES.add(name)
        REGISTRY.register(self)

    def inc(self, amount: float = 1.0, *labelvalues: str) -> None:
        if amount < 0:
            raise ValueError("a counter only goes up: amount must be >= 0")
        if len(labelvalues) != len(self._labelnames):
            raise ValueError(f"{self.name} takes labels {self._labelnames}, got {labelvalues}")
        with self._lock:
            self._values[labelvalues] = self._values.get(labelvalues, 0.0) + amount

    def value(self, *labelvalues: str) -> float:
        with self._lock:
            return self._values.get(labelvalues, 0.0)

    def collect(self) -> Iterator[Metric]:
        family = Metric(self.name, self._documentation, "counter")
        with self._lock:
            for labels, value in self._values.items():
                family.add_sample(self.name, dict(zip(self._labelnames, labels, strict=True)), value)
        yield family


def exposition() -> bytes:
    """The Prometheus text of this process's registry, bare counters under their own names."""
    text = generate_latest(REGISTRY).decode()
    for name in _BARE_NAMES:
        text = text.replace(f"# HELP {name}_total ", f"# HELP {name} ").replace(
            f"# TYPE {name}_total counter", f"# TYPE {name} counter"
        )
    return text.encode()


# -- the bus (shared/bus/delivery.py) ------------------------------------------------------------------

CONSUMER_HANDLED = Counter(
    "phalanx_consumer_handled",
    "Messages a durable consumer handled successfully.",
    ["stream", "durable"],
)
CONSUMER_REDELIVERIES = Counter(
    "phalanx_consumer_redeliveries",
    "Deliveries of a message beyond its first: retries after a failed handler and redeliveries "
    "by the server after a crash or a lost acknowledgement.",
    ["stream", "durable"],
)
CONSUMER_DEAD_LETTERS = Counter(
    "phalanx_consumer_dead_letters",
    "Messages a durable consumer gave up on and moved to the DEADLETTER stream.",
    ["stream", "durable"],
)

# -- the outbox (shared/storage/outbox.py) -------------------------------------------------------------

OUTBOX_DEPTH = Gauge(
    "phalanx_outbox_depth",
    "Committed outbox rows not yet published, as the relay last counted them.",
    ["table"],
)
OUTBOX_OLDEST_AGE = Gauge(
    "phalanx_outbox_oldest_age_seconds",
    "Age of the oldest committed outbox row not yet published (0 when none waits).",
    ["table"],
)
OUTBOX_PUBLISHED = Counter(
    "phalanx_outbox_published",
    "Outbox rows the relay published.",
    ["table"],
)
