"""A controller that lags carries out only the newest decision of a gang (issue #15), on real NATS,
PostgreSQL and the simulator over HTTP.

The scheduler decided a gang, the controller did not reach the decision in time, and the
scheduler decided the gang again, elsewhere. Both wait on the stream; the older is skipped unread
(no bind, no refusal to audit) and the newer is carried out.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubernetes_asyncio import client
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from services.controller.cache import Cache
from services.controller.gangs import GangKeeper
from services.controller.kube_writes import KubeWrites
from services.controller.superseded import Supersession, skipping_superseded
from shared.bus.nats import NatsBus
from shared.bus.ports import ConsumerSpec
from shared.kube.client import request
from shared.messages import decisions as msg
from shared.messages import subjects
from shared.messages.envelope import new_event
from shared.storage import tables
from shared.storage.engine import make_sessions
from tests.integration.controller.conftest import LEADING_EPOCH
from tests.integration.decision_fixtures import new_plain_pod
from tests.waiting import until

pytestmark = pytest.mark.integration


async def new_pod(api: client.ApiClient, name: str) -> str:
    return str((await new_plain_pod(api, name))["metadata"]["uid"])


async def node_of(api: client.ApiClient, name: str) -> str | None:
    pod = await request(api, "GET", f"/api/v1/namespaces/default/pods/{name}")
    return pod["spec"].get("nodeName")


def placed_on(uid: str, name: str, node: str, cycle: int, *, waited: float) -> Any:
    decision = msg.GangPlaced(
        epoch=LEADING_EPOCH,
        cycle=cycle,
        gang_uid="gang-uid",
        namespace="default",
        podgroup="gang",
        binds=(msg.PodBinding(uid=uid, namespace="default", name=name, node=node),),
        valid_until=datetime.now(UTC) + timedelta(minutes=5),
    )
    return new_event(decision, source="test", time=datetime.now(UTC) - timedelta(seconds=waited))


async def audited(engine: AsyncEngine) -> list[str]:
    async with engine.connect() as connection:
        rows = await connection.scalars(select(tables.ControllerOutbox.subject))
        return [subject.split(".")[2] for subject in rows.all()]


async def test_a_decision_superseded_while_it_waited_is_not_carried_out(
    leading: AsyncEngine, api: client.ApiClient, bus: NatsBus
) -> None:
    uid = await new_pod(api, "lagged-0")
    subject = subjects.decision("default", "gang")
    # Decided for node-0, not reached in time, decided again for node-1: both wait on the stream.
    await bus.publish(subject, placed_on(uid, "lagged-0", "node-0", cycle=1, waited=40))
    await bus.publish(subject, placed_on(uid, "lagged-0", "node-1", cycle=9, waited=5))
    handled = skipping_superseded(Supersession(bus), keeper_on(leading, api).decided)
    stats = bus.consume(
        ConsumerSpec(subjects.DECISIONS_STREAM, "controller-decisions", ["decisions.>"]), handled
    )

    await until(lambda: stats.handled == 2, "both decisions handled")
    assert await node_of(api, "lagged-0") == "node-1", "the newest decision is the one carried out"
    assert await audited(leading) == ["bound"], "the older one was neither bound nor refused"


async def test_a_newer_decision_for_other_pods_of_the_gang_leaves_the_older_one_standing(
    leading: AsyncEngine, api: client.ApiClient, bus: NatsBus
) -> None:
    """A gang too large to place at once: the rest placed in a later cycle is no reason to skip
    the first placement, however long it waited."""
    first, rest = await new_pod(api, "large-0"), await new_pod(api, "large-1")
    subject = subjects.decision("default", "gang")
    await bus.publish(subject, placed_on(first, "large-0", "node-0", cycle=1, waited=10))
    await bus.publish(subject, placed_on(rest, "large-1", "node-1", cycle=2, waited=5))
    handled = skipping_superseded(Supersession(bus), keeper_on(leading, api).decided)
    stats = bus.consume(
        ConsumerSpec(subjects.DECISIONS_STREAM, "controller-decisions", ["decisions.>"]), handled
    )

    await until(lambda: stats.handled == 2, "both decisions handled")
    assert [await node_of(api, "large-0"), await node_of(api, "large-1")] == ["node-0", "node-1"]


def keeper_on(engine: AsyncEngine, api: client.ApiClient) -> GangKeeper:
    return GangKeeper(
        Cache(),
        KubeWrites(api, lambda _: None),
        make_sessions(engine),
        scheduler_names=["volcano"],
        on_committed=lambda: None,
    )
