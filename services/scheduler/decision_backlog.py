"""Shell: back-pressure from the controller — hold new decisions back while it cannot keep up.

A decision must be carried out within its window (`valid_until`, half the time-to-live by
default), or the controller refuses it as expired and the scheduler decides the gang again after
the time-to-live. When the controller falls more than a window behind, every decision it reaches
has expired, each refusal adds an audit message, each gang is decided again, and the controller
falls further behind: the overload spiral of issue #15 (S1 at 0.3 scale: 34,199 refusals for
2,838 binds). The cycle loop (cycle_loop.py) asks `held_back()` before each cycle and skips the
cycle while it says so: nothing new is decided until the controller has worked its queue down,
so what it reaches is still in time.

The signal is the controller's durable decisions consumer as JetStream reports it
(`num_pending` + `num_ack_pending`: published and not yet acknowledged, whether still on the
server or fetched and in progress). It is the cheapest reliable one: one request to the NATS
server per cycle, which the scheduler already makes for ingest's watermark (ingest_watermark.py);
it needs no table, no write by the controller and no clock shared between hosts, and it counts
exactly the messages that would wait in front of a new decision. (The scheduler's own pending
decision rows would also count binds carried out and not yet ingested, which a healthy run has
by the thousand; a row the controller writes would cost a write per decision or a timer.)
Every controller replica reads every decision through a durable of its own; replica 0's
(`controller-decisions`) stands for all. No such consumer yet, or NATS unreachable: nothing is
held back (the scheduler must not stop because a probe failed).

How much backlog is too much is judged in time, not count, by the pure `hold_back`: the backlog
divided by the rate the controller has been draining it, against half the decision window.

The probe is made only when its answer can matter. Below `floor` nothing is held back, and the
backlog grows only by the decisions this leader publishes (the controller's work only shrinks
it): so after a probe, while that probe's backlog plus the decisions committed since
(`published`, told by the cycle loop) stays at or below the floor, no probe could say "hold",
and none is made. An idle or lightly loaded scheduler asks nothing; one that publishes bursts
asks before each cycle that could be held back. A new leadership asks at once (decisions of the
one before may still wait), and so does a probe older than `REPROBE_SECONDS`, which bounds what
any decision not counted here (an old leader's outbox) can hide.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import structlog

from services.scheduler.metrics import BACKLOG_PROBES
from shared.bus.ports import Bus
from shared.messages import subjects

log = structlog.get_logger()
# Below this many unacknowledged decisions nothing is held back, whatever the rate: a cycle's
# burst (one enqueue per new gang) must not stop the next cycle of an idle controller.
DEFAULT_FLOOR = 256
# Weight of the newest drain-rate sample in the running estimate.
RATE_WEIGHT = 0.5
# A probe is taken at least this often, whatever the count of decisions published says.
REPROBE_SECONDS = 5.0


def hold_back(backlog: int, drained_per_second: float | None, *, window: float, floor: int) -> bool:
    """Whether a decision published now would wait past half its `window` (seconds) before the
    controller reaches it: `backlog` unacknowledged decisions drained at `drained_per_second`
    (None: not measured yet). At or below `floor` nothing is held back."""
    if backlog <= floor:
        return False
    if not drained_per_second or drained_per_second <= 0:
        return True  # a backlog the controller is not draining at all
    return backlog / drained_per_second > window / 2


class DecisionBacklog:
    """Probes the controller's decisions consumer when it matters; `held_back()` once per cycle."""

    def __init__(
        self, bus: Bus, *, stream: str, durable: str, window: float, floor: int = DEFAULT_FLOOR
    ) -> None:
        self._bus = bus
        self._stream = stream
        self._durable = durable
        self._window = window
        self._floor = floor
        self._last: tuple[float, int, int] | None = None  # (monotonic time, done, backlog) of the last probe
        self.rate: float | None = None  # decisions acknowledged per second while there was work
        self.backlog = 0
        self.holding = False
        self.probes = 0
        # At most this many decisions wait: the last probe's backlog plus those published since,
        # within one leadership (`_epoch`), as of `_probed_at`; None: not known.
        self._bound: int | None = None
        self._probed_at = 0.0
        self._epoch: int | None = None

    def published(self, events: Sequence[tuple[str, object]]) -> None:
        """A cycle committed `events`; its decisions will wait for the controller too."""
        if self._bound is not None:
            self._bound += sum(1 for subject, _ in events if subjects.is_decision(subject))

    async def held_back(self, *, epoch: int | None = None) -> bool:
        """Whether to skip this cycle; `epoch`, the leadership this scheduler cycles under."""
        if epoch != self._epoch:
            self._epoch, self._bound = epoch, None
        if (
            self._bound is not None
            and self._bound <= self._floor
            and time.monotonic() - self._probed_at < REPROBE_SECONDS
        ):
            self._last = None  # the next probe's interval is not one of steady draining
            return self._changed(False)
        self.probes += 1
        BACKLOG_PROBES.inc()
        try:
            progress = await self._bus.progress(self._stream, self._durable)
        except Exception as error:  # no controller yet, or NATS away: do not stop scheduling
            log.debug("controller backlog unknown", error=f"{type(error).__name__}: {error}")
            self._bound = None
            return self._changed(False)
        backlog = progress.pending + progress.ack_pending
        done = progress.ack_floor  # every decision up to this one acknowledged (or dead-lettered)
        now = time.monotonic()
        self._bound, self._probed_at = backlog, now
        if self._last is not None:
            then, done_then, backlog_then = self._last
            # Only an interval with work waiting says how fast the controller drains; an idle
            # one would read as slow.
            if backlog_then > 0 and now > then:
                sample = max(done - done_then, 0) / (now - then)
                self.rate = (
                    sample if self.rate is None else RATE_WEIGHT * sample + (1 - RATE_WEIGHT) * self.rate
                )
        self._last = (now, done, backlog)
        self.backlog = backlog
        return self._changed(hold_back(backlog, self.rate, window=self._window, floor=self._floor))

    def _changed(self, holding: bool) -> bool:
        if holding != self.holding:
            rate = None if self.rate is None else round(self.rate, 1)
            if holding:
                log.warning(
                    "holding new decisions back: the controller lags", backlog=self.backlog, rate=rate
                )
            else:
                log.info("deciding again: the controller caught up", backlog=self.backlog, rate=rate)
            self.holding = holding
        return holding
