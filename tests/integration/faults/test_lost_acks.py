"""Found by T9 (NATS SIGKILLed during a submit burst): a publish whose ack never comes, on a real
NATS JetStream server behind the fault proxy.

The watcher publishes each watch's events through a pipeline that checks acks as they arrive.
NATS killed after taking a message but before acking it never answers, and the client's ack
future has no deadline: the pipeline's drain waited forever, the watcher's Job kind published
nothing again, and every Job created after that was never seen by the controller. Now an ack
overdue by the pipeline's ack timeout raises (the watcher relists and republishes), both while
the watch goes on (`check`, called for every line) and at its end (`drain`).
"""

from __future__ import annotations

import asyncio

import pytest

from shared.bus.nats import NatsBus
from shared.messages import subjects
from tests.integration.faults.test_fault_proxy import bus_behind_proxy

pytestmark = pytest.mark.integration


async def test_an_ack_that_never_comes_fails_the_pipeline_instead_of_hanging_it(
    bus: NatsBus, nats_url: str
) -> None:
    async with bus_behind_proxy(nats_url, "phalanx-watcher") as (proxy, behind):
        pipe = behind.pipeline(ack_timeout=1.0)  # the default is the JetStream timeout, 10 s
        await pipe.send(subjects.job_event("phase", "default", "acked"), b"{}", "acked")
        await pipe.drain()  # a healthy link: acked
        proxy.set_mode("blackhole")  # taken, never answered
        await pipe.send(subjects.job_event("phase", "default", "lost"), b"{}", "lost")
        await asyncio.sleep(1.2)
        with pytest.raises(TimeoutError, match="no ack"):
            pipe.check()  # while the watch goes on
        await pipe.send(subjects.job_event("phase", "default", "lost-2"), b"{}", "lost-2")
        with pytest.raises(TimeoutError, match="acks from JetStream not within"):
            await asyncio.wait_for(pipe.drain(), 10)  # at its end: bounded, not forever
