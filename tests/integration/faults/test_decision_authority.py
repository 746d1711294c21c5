"""A decision is carried out only when it comes from the leading scheduler, in time (issue #13
path 1, issue #14 item 3), on real PostgreSQL and the simulator over HTTP.

The controller reads the scheduler's lease row: a decision of an older epoch (a deposed leader's,
or a replay) and one past its `valid_until` are refused and audited; one of an epoch newer than
the leader's is forged, refused, and does not poison the gang fences, so the real leader's next
decision is still carried out.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes_asyncio import client
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from services.controller.cache import Cache
from services.controller.gangs import BIND_CONCURRENCY, GangKeeper
from services.controller.kube_writes import KubeWrites
from shared import failpoints
from shared.kube.client import request, stream_lines
from shared.messages import decisions as msg
from shared.messages.envelope import new_event
from shared.storage import tables
from shared.storage.engine import make_sessions
from tests.integration.decision_fixtures import lead, new_plain_pod
from tests.waiting import until

pytestmark = pytest.mark.integration
# The controller's connections to the API server (shared/kube/client.py's pool).
CONNECTIONS = 64
LEADING_EPOCH = 5


@pytest.fixture
async def keeper(engine: AsyncEngine, api: client.ApiClient) -> GangKeeper:
    await lead(engine, LEADING_EPOCH)
    return GangKeeper(
        Cache(),
        KubeWrites(api, lambda _: None),
        make_sessions(engine),
        scheduler_names=["volcano"],
        on_committed=lambda: None,
    )


async def new_pod(api: client.ApiClient, name: str) -> msg.PodBinding:
    created = await new_plain_pod(api, name)
    return msg.PodBinding(uid=created["metadata"]["uid"], namespace="default", name=name, node="node-0")


def placed(bind: msg.PodBinding, epoch: int, **extra: Any) -> Any:
    decision = msg.GangPlaced(
        epoch=epoch, cycle=1, gang_uid="gang", namespace="default", podgroup="gang", binds=(bind,), **extra
    )
    return new_event(decision, source="test")


async def node_of(api: client.ApiClient, name: str) -> str | None:
    pod = await request(api, "GET", f"/api/v1/namespaces/default/pods/{name}")
    return pod["spec"].get("nodeName")


async def refusals(engine: AsyncEngine) -> list[str]:
    async with engine.connect() as connection:
        return list(
            (
                await connection.scalars(
                    select(tables.ControllerOutbox.subject).where(
                        tables.ControllerOutbox.subject.like("audit.controller.decision-refused.%")
                    )
                )
            ).all()
        )


async def test_a_deposed_leaders_decision_is_refused_and_audited(
    engine: AsyncEngine, api: client.ApiClient, keeper: GangKeeper
) -> None:
    bind = await new_pod(api, "stale-0")
    await keeper.decided(placed(bind, LEADING_EPOCH - 1))
    assert await node_of(api, "stale-0") is None
    assert len(await refusals(engine)) == 1


async def test_a_forged_epoch_is_refused_and_does_not_poison_the_fences(
    engine: AsyncEngine, api: client.ApiClient, keeper: GangKeeper
) -> None:
    forged = await new_pod(api, "forged-0")
    await keeper.decided(placed(forged, 10**9))
    assert await node_of(api, "forged-0") is None

    real = await new_pod(api, "real-0")
    await keeper.decided(placed(real, LEADING_EPOCH))
    assert await node_of(api, "real-0") == "node-0", "the leader's own decision is carried out"
    assert len(await refusals(engine)) == 1


async def test_a_decision_past_its_time_is_refused(
    engine: AsyncEngine, api: client.ApiClient, keeper: GangKeeper
) -> None:
    late = await new_pod(api, "late-0")
    long_ago = datetime.now(UTC) - timedelta(minutes=5)
    await keeper.decided(placed(late, LEADING_EPOCH, valid_until=long_ago))
    assert await node_of(api, "late-0") is None
    assert len(await refusals(engine)) == 1

    in_time = await new_pod(api, "in-time-0")
    await keeper.decided(placed(in_time, LEADING_EPOCH, valid_until=datetime.now(UTC) + timedelta(minutes=5)))
    assert await node_of(api, "in-time-0") == "node-0"


def gang_of_two(
    first: msg.PodBinding,
    second: msg.PodBinding,
    epoch: int,
    valid_until: datetime,
    gang: str = "redelivered",
) -> Any:
    decision = msg.GangPlaced(
        epoch=epoch,
        cycle=1,
        gang_uid=gang,
        namespace="default",
        podgroup=gang,
        binds=(first, second),
        valid_until=valid_until,
    )
    return new_event(decision, source="test")


async def test_a_gang_decision_begun_in_time_is_carried_out_whole_however_late(
    api: client.ApiClient, keeper: GangKeeper, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #13's "no gang half-bound": the controller falls behind (here its binds after the
    first are held at a failpoint) until the decision's `valid_until` has passed. Its first bind
    was sent in time, so the decision has begun and every other bind is still carried out."""
    monkeypatch.setenv(failpoints.ENV, "ctl.mid_bind_batch=sleep(4)")
    monkeypatch.setattr(failpoints, "_points", None)
    first, second = await new_pod(api, "held-0"), await new_pod(api, "held-1")
    in_two_seconds = datetime.now(UTC) + timedelta(seconds=2)
    await keeper.decided(gang_of_two(first, second, LEADING_EPOCH, in_two_seconds, gang="held"))
    assert await node_of(api, "held-0") == "node-0", "the bind sent in time is carried out"
    assert await node_of(api, "held-1") == "node-0", "the rest of the begun decision follows it"


async def test_a_gang_decision_whose_first_bind_would_go_out_late_is_refused_whole(
    api: client.ApiClient, keeper: GangKeeper
) -> None:
    """In time on arrival, but every bind slot is taken until `valid_until` has passed: no bind
    was sent, so the decision never began and none of it is carried out (the scheduler may no
    longer count it)."""
    slots = keeper._bind_slots  # taken as a burst of other gangs' binds would take them
    for _ in range(BIND_CONCURRENCY):
        await slots.acquire()
    first, second = await new_pod(api, "queued-0"), await new_pod(api, "queued-1")
    in_two_seconds = datetime.now(UTC) + timedelta(seconds=2)
    carrying_out = asyncio.create_task(
        keeper.decided(gang_of_two(first, second, LEADING_EPOCH, in_two_seconds, gang="queued"))
    )
    await asyncio.sleep(3)
    for _ in range(BIND_CONCURRENCY):
        slots.release()
    await carrying_out
    assert [await node_of(api, "queued-0"), await node_of(api, "queued-1")] == [None, None]


async def test_a_bind_that_waits_for_a_connection_past_the_window_is_not_sent(
    api: client.ApiClient, keeper: GangKeeper
) -> None:
    """In time on arrival and when it takes its bind slot, but every connection to the API is busy
    (here: held by watches) until `valid_until` has passed: the bind is checked again once it has
    a connection, and is not sent."""
    bind = await new_pod(api, "pooled-0")
    watching: list[asyncio.Event] = [asyncio.Event() for _ in range(CONNECTIONS)]

    async def hold_a_connection(started: asyncio.Event) -> None:
        with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
            async for _ in stream_lines(api, "/api/v1/pods", [("watch", "true")], timeout=4):
                started.set()

    holders = [asyncio.create_task(hold_a_connection(started)) for started in watching]
    await until(lambda: all(started.is_set() for started in watching), "every connection held")
    in_two_seconds = datetime.now(UTC) + timedelta(seconds=2)
    await keeper.decided(placed(bind, LEADING_EPOCH, valid_until=in_two_seconds))
    await asyncio.gather(*holders)
    assert await node_of(api, "pooled-0") is None


async def test_a_redelivered_decision_that_had_begun_is_completed_past_its_time(
    engine: AsyncEngine, api: client.ApiClient, keeper: GangKeeper
) -> None:
    """The controller died between a gang's binds; JetStream hands the decision to its successor
    after the decision's `valid_until`. One pod is bound where the decision says, so it had
    begun: the rest is bound, not refused."""
    first, second = await new_pod(api, "again-0"), await new_pod(api, "again-1")
    await KubeWrites(api, lambda _: None).bind("default", "again-0", "node-0", first.uid)
    long_ago = datetime.now(UTC) - timedelta(minutes=5)

    await keeper.decided(gang_of_two(first, second, LEADING_EPOCH, long_ago))

    assert await node_of(api, "again-1") == "node-0"
    assert await refusals(engine) == []


async def test_a_redelivered_decision_never_begun_is_refused_past_its_time(
    engine: AsyncEngine, api: client.ApiClient, keeper: GangKeeper
) -> None:
    first, second = await new_pod(api, "unbegun-0"), await new_pod(api, "unbegun-1")
    await keeper.decided(gang_of_two(first, second, LEADING_EPOCH, datetime.now(UTC) - timedelta(minutes=5)))
    assert [await node_of(api, "unbegun-0"), await node_of(api, "unbegun-1")] == [None, None]
    assert len(await refusals(engine)) == 1


async def test_a_begun_decision_of_a_deposed_leader_is_still_refused(
    engine: AsyncEngine, api: client.ApiClient, keeper: GangKeeper
) -> None:
    """Only expiry yields to "begun": a stale epoch is refused even with a pod already bound."""
    first, second = await new_pod(api, "deposed-0"), await new_pod(api, "deposed-1")
    await KubeWrites(api, lambda _: None).bind("default", "deposed-0", "node-0", first.uid)
    await keeper.decided(
        gang_of_two(first, second, LEADING_EPOCH - 1, datetime.now(UTC) - timedelta(minutes=5))
    )
    assert await node_of(api, "deposed-1") is None
    assert len(await refusals(engine)) == 1
