"""The watcher's translation through its composition root (`services.watcher.app.build`), on the
simulator, real NATS JetStream and PostgreSQL (its kind leases): each change to an object in the
API becomes one `cluster.<kind>.*` message, ADDED, MODIFIED, DELETED in that order, carrying the
object as the API returned it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client
from sqlalchemy.ext.asyncio import AsyncEngine

from services.watcher.app import Watcher, build
from services.watcher.settings import WatcherSettings
from shared.bus.nats import NatsBus
from shared.bus.ports import ConsumerSpec
from shared.config import NatsSettings
from shared.kube.client import request
from shared.messages import subjects
from shared.messages.cluster import ObjectChanged
from shared.messages.envelope import CloudEvent
from tests.integration.running import running
from tests.waiting import until

pytestmark = pytest.mark.integration
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"


@pytest.fixture
async def watcher(
    nats_url: str, migrated_engine: AsyncEngine, api: client.ApiClient
) -> AsyncIterator[Watcher]:
    """The watcher as `run` makes it, on the test's servers."""
    bus = await NatsBus.connect(NatsSettings(url=nats_url), name="phalanx-watcher")
    built = build(WatcherSettings(), bus=bus, store=migrated_engine, kube=api)
    try:
        async with running(built):
            yield built
    finally:
        await bus.close()


@pytest.fixture
async def published(nats_url: str) -> AsyncIterator[list[ObjectChanged]]:
    """What reaches `cluster.queue.*`, in order, as a consumer sees it."""
    seen: list[ObjectChanged] = []

    async def record(event: CloudEvent[Any]) -> None:
        if isinstance(event.data, ObjectChanged):
            seen.append(event.data)

    reader = await NatsBus.connect(NatsSettings(url=nats_url), name="test")
    await reader.ensure_streams()
    reader.consume(ConsumerSpec(subjects.CLUSTER_STREAM, "test", ["cluster.queue.>"]), record)
    yield seen
    await reader.close()


def changes(seen: list[ObjectChanged], kind: str, name: str) -> list[str]:
    return [each.change for each in seen if each.kind == kind and each.name == name]


async def test_an_objects_changes_reach_the_bus_in_order(
    watcher: Watcher, api: client.ApiClient, published: list[ObjectChanged]
) -> None:
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "shell"}}
    created = await request(api, "POST", QUEUES, body=queue | {"spec": {"weight": 1}})
    await until(lambda: changes(published, "Queue", "shell") == ["ADDED"], "the Queue ADDED")
    await request(
        api,
        "PATCH",
        f"{QUEUES}/shell",
        body={"spec": {"weight": 3}},
        content_type="application/merge-patch+json",
    )
    await until(lambda: changes(published, "Queue", "shell") == ["ADDED", "MODIFIED"], "the Queue MODIFIED")
    await request(api, "DELETE", f"{QUEUES}/shell")
    await until(lambda: changes(published, "Queue", "shell")[-1:] == ["DELETED"], "the Queue DELETED")

    added, modified = (each for each in published if each.name == "shell" and each.change != "DELETED")
    assert added.uid == modified.uid == created["metadata"]["uid"]
    assert added.object["spec"]["weight"] == 1
    assert modified.object["spec"]["weight"] == 3
    assert modified.resource_version > added.resource_version
    assert changes(published, "Queue", "shell") == ["ADDED", "MODIFIED", "DELETED"]
