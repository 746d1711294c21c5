"""An optional write rate limit: a token bucket of `qps` tokens a second holding up to `burst`.

Peers are usually measured behind client-go's default limits (QPS 5/50, burst 10/100); the HTTP
layer awaits `acquire()` before every write so that a benchmark against the simulator can be
run under the same limit. Requests wait for a token, as a throttled client would, rather than
being refused. The clock is injected so the arithmetic is testable without sleeping.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class TokenBucket:
    def __init__(self, qps: float, burst: int, clock: Callable[[], float]) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("qps must be positive and burst at least 1")
        self._qps, self._burst, self._clock = qps, float(burst), clock
        self._tokens = float(burst)
        self._updated = clock()

    def reserve(self) -> float:
        """Take a token and return how long to wait before using it (0 when one is ready)."""
        now = self._clock()
        self._tokens = min(self._burst, self._tokens + (now - self._updated) * self._qps)
        self._updated = now
        self._tokens -= 1
        return 0.0 if self._tokens >= 0 else -self._tokens / self._qps

    async def acquire(self) -> None:
        delay = self.reserve()
        if delay > 0:
            await asyncio.sleep(delay)
