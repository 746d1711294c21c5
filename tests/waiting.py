"""The one way a test waits for something another process or task does on its own time.

Services, the simulator and the bus act asynchronously, so a test polls for the state it expects
instead of sleeping a fixed time. `eventually` polls from plain (thread) code, `until` from a
coroutine without blocking the event loop the code under test runs on. Both return the first truthy
value the check gives, so the test can go on asserting on it, and fail with `what` when the time is
up. An `AssertionError` raised by the check counts as "not yet" until the deadline, then propagates.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

WITHIN = 10.0  # seconds: long enough for a loaded 2-core machine, short enough to fail fast
EVERY = 0.02  # seconds between two looks


def eventually(
    check: Callable[[], T], what: str = "the condition", *, within: float = WITHIN, every: float = EVERY
) -> T:
    """Call `check` until it returns something truthy, and return that."""
    deadline = time.monotonic() + within
    while True:
        try:
            result = check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
        else:
            if result:
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"not within {within:g}s: {what} (last seen: {result!r})")
        time.sleep(every)


async def until(
    check: Callable[[], T | Awaitable[T]],
    what: str = "the condition",
    *,
    within: float = WITHIN,
    every: float = EVERY,
) -> T:
    """Await `check` (a plain or async callable) until it returns something truthy, and return that."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        try:
            outcome = check()
            result: T = await outcome if inspect.isawaitable(outcome) else outcome
        except AssertionError:
            if loop.time() > deadline:
                raise
        else:
            if result:
                return result
            if loop.time() > deadline:
                raise AssertionError(f"not within {within:g}s: {what} (last seen: {result!r})")
        await asyncio.sleep(every)
