"""The in-memory bus (shared/bus/memory.py) against the `Bus` contract, and what only it has: a
duplicate window that a test can move past."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from shared.bus.memory import MemoryBroker, MemoryBus, matches
from shared.bus.ports import Bus
from shared.messages import subjects
from tests.contracts.bus import BusContract, Connect, Recorder, phase_event, spec, subject
from tests.waiting import until

pytestmark = pytest.mark.unit


class TestMemoryBus(BusContract):
    @pytest.fixture
    async def connect(self) -> AsyncIterator[Connect]:
        broker = MemoryBroker()
        made: list[MemoryBus] = []

        async def connect() -> Bus:
            made.append(MemoryBus(broker, name="test"))
            return made[-1]

        yield connect
        for bus in made:
            await bus.close()


async def test_a_repeated_message_id_is_stored_again_past_the_duplicate_window() -> None:
    now = [0.0]
    broker = MemoryBroker(duplicate_window=120.0, clock=lambda: now[0])
    bus = MemoryBus(broker)
    await bus.publish(subject("j1"), phase_event("j1", "a", event_id="same"))
    now[0] = 119.0
    await bus.publish(subject("j1"), phase_event("j1", "a", event_id="same"))
    now[0] = 240.0
    await bus.publish(subject("j1"), phase_event("j1", "a", event_id="same"))
    assert [m.sequence for m in broker.messages(subjects.JOBS_STREAM)] == [1, 2]
    record = Recorder()
    bus.consume(spec("window"), record)
    await until(lambda: len(record.seen) == 2)
    await bus.close()


def test_subjects_match_as_nats_matches_them() -> None:
    assert matches("jobs.>", "jobs.phase.default.j1")
    assert not matches("jobs.>", "jobs")
    assert matches("cluster.pod.*.*", "cluster.pod.default.p1")
    assert not matches("cluster.pod.*", "cluster.pod.default.p1")
    assert not matches("cluster.job.>", "cluster.pod.default.p1")
