"""Group commit: callers that arrive together share a flush and each gets its own result."""

from __future__ import annotations

import asyncio

import pytest

from shared.batching import Batcher

pytestmark = pytest.mark.unit


class Recorder:
    """A flush that doubles each item and remembers how the items were grouped."""

    def __init__(self, *, fail_first: bool = False, pause: float = 0.0) -> None:
        self.batches: list[list[int]] = []
        self._fail_next = fail_first
        self._pause = pause

    async def flush(self, items: list[int]) -> list[int]:
        self.batches.append(items)
        await asyncio.sleep(self._pause)
        if self._fail_next:
            self._fail_next = False
            raise ConnectionError("database went away")
        return [2 * item for item in items]


async def test_callers_that_arrive_together_share_one_flush_and_get_their_own_results() -> None:
    recorder = Recorder()
    batcher = Batcher(recorder.flush)
    results = await asyncio.gather(*(batcher.submit(i) for i in range(5)))
    assert results == [0, 2, 4, 6, 8]
    assert recorder.batches == [[0, 1, 2, 3, 4]]


async def test_items_that_arrive_during_a_flush_go_in_the_next_one() -> None:
    recorder = Recorder(pause=0.05)
    batcher = Batcher(recorder.flush)
    first = asyncio.ensure_future(batcher.submit(1))
    await asyncio.sleep(0.01)  # the first flush is under way
    later = await asyncio.gather(batcher.submit(2), batcher.submit(3))
    assert (await first, later) == (2, [4, 6])
    assert recorder.batches == [[1], [2, 3]]


async def test_a_batch_is_never_larger_than_its_limit() -> None:
    recorder = Recorder()
    batcher = Batcher(recorder.flush, max_batch=2)
    assert await asyncio.gather(*(batcher.submit(i) for i in range(5))) == [0, 2, 4, 6, 8]
    assert recorder.batches == [[0, 1], [2, 3], [4]]


async def test_a_failed_flush_fails_its_callers_and_the_next_batch_still_goes_through() -> None:
    recorder = Recorder(fail_first=True, pause=0.02)
    batcher = Batcher(recorder.flush)
    failing = [asyncio.ensure_future(batcher.submit(i)) for i in (1, 2)]
    await asyncio.sleep(0.005)
    after = asyncio.ensure_future(batcher.submit(3))
    for caller in failing:
        with pytest.raises(ConnectionError, match="database went away"):
            await caller
    assert await after == 6


async def test_a_cancelled_caller_leaves_the_others_their_results() -> None:
    recorder = Recorder(pause=0.02)
    batcher = Batcher(recorder.flush)
    leaving = asyncio.ensure_future(batcher.submit(1))
    staying = asyncio.ensure_future(batcher.submit(2))
    await asyncio.sleep(0.005)
    leaving.cancel()
    assert await staying == 4
    assert leaving.cancelled()


async def test_a_flush_that_answers_for_the_wrong_number_of_items_fails_its_callers() -> None:
    async def short(items: list[int]) -> list[int]:
        return items[:-1]

    batcher = Batcher(short)
    with pytest.raises(RuntimeError, match="2 results for 3 items"):
        await asyncio.gather(*(batcher.submit(i) for i in range(3)))
