"""Whether a NATS consumer is keeping up, for `/readyz` and `/metrics` (issue #28, item 5).

The bus (nats.py) runs `watch` beside each consumer it starts. Every few seconds it looks at three
things and reports the first that is wrong to the service's `Health` (shared/runtime.py), under
the consumer's name, so `/readyz` answers 503 with the reason, and sets
`phalanx_bus_consumer_unhealthy{durable, reason}` to 1 for that reason (0 for the others):

- `stuck`: messages are in the process and none has finished (acked or dead-lettered) for
  `spec.stuck_after` seconds: a handler that hangs, or that retries forever against a dead API;
- `lagging`: more than `spec.max_lag` messages wait on the server, not yet delivered;
- `dead_lettering`: `spec.dead_letter_loop` or more messages dead-lettered within the last
  `spec.dead_letter_window` seconds: every message failing the same way, whatever its content.

Each condition clears on its own when it no longer holds (level-triggered), and a service with
no `Health` attached (a tool, a test) only gets the metric. `assess` is the pure decision.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog
from prometheus_client import Gauge

log = structlog.get_logger()
REASONS = ("stuck", "lagging", "dead_lettering")
UNHEALTHY = Gauge(
    "phalanx_bus_consumer_unhealthy",
    "1 while a NATS consumer is stuck, lagging or dead-lettering in a loop (the reason label says "
    "which); the service's /readyz then answers 503 naming it.",
    ["durable", "reason"],
)
PENDING = Gauge("phalanx_bus_consumer_pending", "Messages waiting on the server for a consumer.", ["durable"])


class Reporter(Protocol):
    def report(self, check: str, problem: str | None) -> None: ...


@dataclass
class Progress:
    """What a consumer's delivery tells the watch: when work last finished, and its dead letters."""

    last_finished: float = field(default_factory=time.monotonic)
    dead_letters: deque[float] = field(default_factory=deque)

    def finished(self) -> None:
        self.last_finished = time.monotonic()

    def resumed(self) -> None:
        """Work reached an idle consumer: its time without a finished message starts now."""
        self.finished()

    def dead_lettered(self) -> None:
        self.finished()
        self.dead_letters.append(time.monotonic())


def assess(
    spec: Any, progress: Progress, *, in_flight: int, pending: int, now: float
) -> tuple[str, str] | None:
    """(reason, detail) of what is wrong with the consumer, or None when it keeps up."""
    while progress.dead_letters and progress.dead_letters[0] < now - spec.dead_letter_window:
        progress.dead_letters.popleft()
    idle = now - progress.last_finished
    if in_flight and idle > spec.stuck_after:
        return "stuck", f"{in_flight} message(s) in progress and none finished for {idle:.0f} s"
    if pending > spec.max_lag:
        return "lagging", f"{pending} messages waiting on the server (limit {spec.max_lag})"
    if len(progress.dead_letters) >= spec.dead_letter_loop:
        count, window = len(progress.dead_letters), spec.dead_letter_window
        return "dead_lettering", f"{count} messages dead-lettered in {window:.0f} s"
    return None


async def watch(
    spec: Any,
    progress: Progress,
    in_flight: Callable[[], int],
    pending: Callable[[], Awaitable[int]],
    reporter: Callable[[], Reporter | None],
) -> None:
    """Assess the consumer every `spec.health_every` seconds until cancelled."""
    check = f"consumer {spec.durable}"
    try:
        while True:
            await asyncio.sleep(spec.health_every)
            try:
                waiting = await pending()
            except Exception as error:  # reconnecting: the lag is unknown, not a problem by itself
                log.debug("consumer info unavailable", durable=spec.durable, error=str(error))
                waiting = 0
            PENDING.labels(spec.durable).set(waiting)
            verdict = assess(spec, progress, in_flight=in_flight(), pending=waiting, now=time.monotonic())
            for reason in REASONS:
                UNHEALTHY.labels(spec.durable, reason).set(1 if verdict and verdict[0] == reason else 0)
            if (health := reporter()) is not None:
                health.report(check, f"{check} {verdict[0]}: {verdict[1]}" if verdict else None)
    finally:
        if (health := reporter()) is not None:
            health.report(check, None)
