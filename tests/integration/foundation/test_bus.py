"""The bus against a real NATS JetStream server: the `Bus` contract (tests/contracts/bus.py) that
the in-memory twin passes too, and what only JetStream has (its streams, subject tokens)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from shared.bus.nats import NatsBus
from shared.bus.ports import Bus, ConsumerSpec
from shared.config import NatsSettings
from shared.messages import jobs, subjects
from shared.messages.envelope import CloudEvent
from tests.contracts.bus import BusContract, Connect, phase_event
from tests.waiting import until

pytestmark = pytest.mark.integration


class TestNatsBus(BusContract):
    @pytest.fixture
    async def connect(self, nats_url: str) -> AsyncIterator[Connect]:
        made: list[NatsBus] = []

        async def connect() -> Bus:
            made.append(await NatsBus.connect(NatsSettings(url=nats_url), name="test"))
            await made[-1].ensure_streams()
            return made[-1]

        yield connect
        for bus in made:
            await bus.close()


async def test_streams_are_created_idempotently(bus: NatsBus) -> None:
    await bus.ensure_streams()
    await bus.ensure_streams()
    names = {info.config.name for info in await bus.js.streams_info()}
    assert names == set(subjects.STREAM_SUBJECTS)


async def test_names_with_dots_stay_one_subject_token(bus: NatsBus) -> None:
    seen: list[str] = []

    async def handle(event: CloudEvent[jobs.JobPhaseChanged]) -> None:
        seen.append(event.data.name)

    only_one_object = ConsumerSpec(
        subjects.JOBS_STREAM,
        "dotted",
        [subjects.job_event("phase", "default", "my.job.v2")],
        backoff=(0.05,),
    )
    bus.consume(only_one_object, handle)
    await bus.publish(
        subjects.job_event("phase", "default", "my.job.v2"), phase_event("my.job.v2", "Running")
    )
    await bus.publish(subjects.job_event("phase", "default", "my"), phase_event("my", "Running"))
    await until(lambda: seen)
    await asyncio.sleep(0.3)
    assert seen == ["my.job.v2"]
