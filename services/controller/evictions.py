"""Shell: carry out a decision's evictions through pods/eviction, retrying those a
PodDisruptionBudget refuses.

The Eviction API answers 429 while a budget forbids the disruption ("retry later", as
https://kubernetes.io/docs/concepts/scheduling-eviction/api-eviction/ says). The first attempt
is made at once; a refused pod is tried again in the background with a growing pause until the
decision's time to be carried out ends, so the decision handler never waits on a budget. One that
is still refused then is reported (`on_refused`: a Warning event and an audit record) and left
to the scheduler: its decision is never confirmed, expires, and the next cycle chooses again.
An allowed eviction deletes the pod gracefully; the scheduler counts it as releasing until it is
gone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta

import structlog

from services.controller.kube_writes import EvictionRefused, KubeWrites
from shared.messages import decisions as msg

log = structlog.get_logger()
FIRST_PAUSE_SECONDS = 0.5
LONGEST_PAUSE_SECONDS = 4.0
# Without a deadline in the decision (an older scheduler), retries stop after this long.
DEFAULT_WINDOW = timedelta(seconds=15)
Refused = Callable[[msg.PodEviction, str], Awaitable[None]]
Evicted = Callable[[msg.PodEviction], Awaitable[None]]


class Evictor:
    def __init__(self, kube: KubeWrites, *, clock: Callable[[], datetime] | None = None) -> None:
        self._kube = kube
        self._clock = clock or (lambda: datetime.now(UTC))
        self._retries: set[asyncio.Task[None]] = set()

    async def evict_all(
        self,
        evictions: Sequence[msg.PodEviction],
        valid_until: datetime | None,
        *,
        on_evicted: Evicted,
        on_refused: Refused,
    ) -> list[str]:
        """Evict each pod once now: "evicted", "gone" or "refused" (then retried in the background)."""
        outcomes = await asyncio.gather(*(self._attempt(e) for e in evictions))
        deadline = valid_until or self._clock() + DEFAULT_WINDOW
        for eviction, (outcome, why) in zip(evictions, outcomes, strict=True):
            if outcome == "refused":
                task = asyncio.create_task(self._retry(eviction, why, deadline, on_evicted, on_refused))
                self._retries.add(task)
                task.add_done_callback(self._retries.discard)
        return [outcome for outcome, _ in outcomes]

    async def _attempt(self, eviction: msg.PodEviction) -> tuple[str, str]:
        try:
            done = await self._kube.evict(eviction.namespace, eviction.name, eviction.uid)
        except EvictionRefused as refused:
            return "refused", str(refused)
        return ("evicted" if done else "gone"), ""

    async def _retry(
        self,
        eviction: msg.PodEviction,
        why: str,
        deadline: datetime,
        on_evicted: Evicted,
        on_refused: Refused,
    ) -> None:
        pause = FIRST_PAUSE_SECONDS
        try:
            while self._clock() + timedelta(seconds=pause) < deadline:
                await asyncio.sleep(pause)
                pause = min(pause * 2, LONGEST_PAUSE_SECONDS)
                outcome, why = await self._attempt(eviction)
                if outcome == "evicted":
                    await on_evicted(eviction)
                if outcome != "refused":
                    return
            log.warning("eviction refused", pod=eviction.name, namespace=eviction.namespace, why=why)
            await on_refused(eviction, why)
        except Exception:  # a background task has no caller to tell; the decision expires anyway
            log.exception("retrying an eviction failed", pod=eviction.name, namespace=eviction.namespace)
