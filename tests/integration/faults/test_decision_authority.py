"""A decision is carried out only when it comes from the leading scheduler, in time (issue #13
path 1, issue #14 item 3), on real PostgreSQL and the simulator over HTTP.

The controller reads the scheduler's lease row: a decision of an older epoch (a deposed leader's,
or a replay) and one past its `valid_until` are refused and audited; one of an epoch newer than
the leader's is forged, refused, and does not poison the gang fences, so the real leader's next
decision is still carried out.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes_asyncio import client
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncEngine

from services.controller.cache import Cache
from services.controller.gangs import GangKeeper
from services.controller.kube_writes import KubeWrites
from shared import failpoints
from shared.kube.client import request
from shared.messages import decisions as msg
from shared.messages.envelope import new_event
from shared.storage import tables
from shared.storage.engine import make_sessions

pytestmark = pytest.mark.integration
LEADING_EPOCH = 5


@pytest.fixture
async def keeper(engine: AsyncEngine, api: client.ApiClient) -> GangKeeper:
    async with engine.begin() as connection:
        await connection.execute(
            text(
                "INSERT INTO scheduler_leader (id, holder, epoch, expires_at) "
                "VALUES (1, 'scheduler-a', :epoch, now() + interval '1 hour')"
            ),
            {"epoch": LEADING_EPOCH},
        )
    return GangKeeper(
        Cache(),
        KubeWrites(api, lambda _: None),
        make_sessions(engine),
        scheduler_names=["volcano"],
        on_committed=lambda: None,
    )


async def new_pod(api: client.ApiClient, name: str) -> msg.Bind:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "busybox"}]},
    }
    created = await request(api, "POST", "/api/v1/namespaces/default/pods", body=body)
    return msg.Bind(uid=created["metadata"]["uid"], namespace="default", name=name, node="node-0")


def placed(bind: msg.Bind, epoch: int, **extra: Any) -> Any:
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


async def test_a_bind_held_back_past_its_decisions_time_is_not_sent(
    api: client.ApiClient, keeper: GangKeeper, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check on arrival is not enough: a bind that waits (for a bind slot, or here at a
    failpoint) until after `valid_until` would land when the scheduler no longer counts it."""
    monkeypatch.setenv(failpoints.ENV, "ctl.mid_bind_batch=sleep(8)")
    monkeypatch.setattr(failpoints, "_points", None)
    first, second = await new_pod(api, "held-0"), await new_pod(api, "held-1")
    decision = msg.GangPlaced(
        epoch=LEADING_EPOCH,
        cycle=1,
        gang_uid="held",
        namespace="default",
        podgroup="held",
        binds=(first, second),
        valid_until=datetime.now(UTC) + timedelta(seconds=5),
    )
    await keeper.decided(new_event(decision, source="test"))
    assert await node_of(api, "held-0") == "node-0", "the bind sent in time is carried out"
    assert await node_of(api, "held-1") is None, "the bind that ran out of time is not sent"
