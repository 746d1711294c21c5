"""A NATS cluster of three real servers on loopback, as `phalanx up --scale nats=3` starts it.

The bootstrap makes every stream with three replicas (one per server URL it was given), each
service's identity works on every member, and a decision published before and after the stream's
leader is SIGKILLed reaches the controller's durable consumer exactly once: nothing acknowledged
is lost with a server, and the clients move to a live member on their own.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest

from shared.bus import bootstrap, permissions
from shared.bus.nats import NatsBus
from shared.bus.ports import ConsumerSpec
from shared.config import NatsSettings
from shared.infra import local, nats_auth, provision
from shared.messages import jobs, subjects
from shared.messages.envelope import CloudEvent, new_event
from tests.waiting import until

pytestmark = pytest.mark.integration
SIZE = 3
# Never set: the cluster is always three local servers of this test's own.
UNSET_ENV = "PHALANX_TEST_NATS_CLUSTER_URL_UNUSED"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[provision.Provided]:
    provided = provision.provide_nats(tmp_path_factory.mktemp("nats-cluster"), env=UNSET_ENV, size=SIZE)
    yield provided
    provided.stop()


def settings_of(provided: provision.Provided, role: str) -> NatsSettings:
    user, password = provided.credentials[role]
    return NatsSettings(url=provided.url, user=user, password=password, manage_streams=False)


def decision(name: str) -> CloudEvent[jobs.JobPhaseChanged]:
    data = jobs.JobPhaseChanged(
        namespace="default", name=name, uid=f"uid-{name}", previous=None, phase="Running"
    )
    return new_event(data, source="test")


async def stream_leader(provided: provision.Provided, stream: str) -> str:
    client = await nats.connect(provided.url_as(permissions.BOOTSTRAP).split(","))
    try:
        info = await client.jetstream().stream_info(stream)
        assert info.cluster is not None
        assert info.cluster.leader, "the stream has a leader"
        return info.cluster.leader
    finally:
        await client.close()


def test_the_members_are_three_servers_with_one_url_each(cluster: provision.Provided) -> None:
    assert [server.name for server in cluster.servers] == ["nats", "nats-2", "nats-3"]
    assert cluster.url.split(",") == [server.url for server in cluster.servers]
    assert all(local.is_alive(server.pid) for server in cluster.servers)


async def test_streams_are_replicated_on_every_server_and_survive_losing_the_leader(
    cluster: provision.Provided,
) -> None:
    await bootstrap.create_streams(NatsSettings(url=cluster.url_as(permissions.BOOTSTRAP)))
    client = await nats.connect(cluster.url_as(permissions.BOOTSTRAP).split(","))
    try:
        for stream in subjects.STREAM_SUBJECTS:
            info = await client.jetstream().stream_info(stream)
            assert info.config.num_replicas == SIZE, stream
            assert info.cluster is not None
            assert len(info.cluster.replicas or []) == SIZE - 1, stream
    finally:
        await client.close()

    scheduler = await NatsBus.connect(settings_of(cluster, "scheduler"), name="scheduler")
    controller = await NatsBus.connect(settings_of(cluster, "controller"), name="controller")
    received: list[str] = []

    async def handle(event: CloudEvent[object]) -> None:
        received.append(event.id)

    leader = await stream_leader(cluster, subjects.DECISIONS_STREAM)
    victim = next(server for server in cluster.servers if server.name == leader)
    try:
        await scheduler.ensure_streams()  # looks them up only
        before = [decision(f"before-{index}") for index in range(20)]
        for event in before:
            await scheduler.publish(subjects.decision("default", event.data.name), event)
        controller.consume(
            ConsumerSpec(subjects.DECISIONS_STREAM, "controller-decisions", ["decisions.>"]), handle
        )
        await until(lambda: len(received) >= 10, "the controller consumes decisions")

        os.kill(victim.pid, signal.SIGKILL)

        after = [decision(f"after-{index}") for index in range(20)]
        for event in after:
            # A publish the dying leader never acknowledged is retried, as the outbox relay does;
            # the message id makes the retry land once.
            await until(lambda event=event: _published(scheduler, event), "a publish is acked", within=60)
        expected = {event.id for event in [*before, *after]}
        await until(lambda: expected <= set(received), "every decision reaches the controller", within=60)
    finally:
        await scheduler.close()
        await controller.close()
    # At least once (a redelivery after a lost ack is allowed; consumers are idempotent), and
    # nothing the controller did not publish.
    assert set(received) == expected
    assert await stream_leader(cluster, subjects.DECISIONS_STREAM) != leader

    # The killed member comes back from its own configuration and catches up as a replica.
    revived = local.restart_nats(victim)
    try:
        assert revived.port == victim.port
        await until(lambda: _all_replicas_current(cluster), "the restarted member is current", within=60)
    finally:
        local.stop(revived)


async def _all_replicas_current(provided: provision.Provided) -> bool:
    client = await nats.connect(provided.url_as(permissions.BOOTSTRAP).split(","))
    try:
        info = await client.jetstream().stream_info(subjects.DECISIONS_STREAM)
    finally:
        await client.close()
    replicas = (info.cluster.replicas or []) if info.cluster else []
    return len(replicas) == SIZE - 1 and all(replica.current for replica in replicas)


async def _published(bus: NatsBus, event: CloudEvent[jobs.JobPhaseChanged]) -> bool:
    try:
        await bus.publish(subjects.decision("default", event.data.name), event)
    except Exception:  # no leader yet, or the connection is moving to another member
        return False
    return True


async def test_the_bootstrap_waits_for_a_cluster_still_forming(tmp_path: Path) -> None:
    """One member of three alone has no quorum, so JetStream answers nothing yet; the bootstrap
    keeps asking and creates the streams once the other two have joined."""
    names = ["nats", "nats-2", "nats-3"]
    ports = tuple(local.free_port() for _ in names)
    pairs = zip(names, ports, strict=True)
    members = [nats_auth.ClusterMember(name, port, ports, "route-secret") for name, port in pairs]
    started = [local.start_nats(tmp_path, name=names[0], cluster=members[0])]
    try:
        secret = nats_auth.passwords_for(tmp_path)[permissions.BOOTSTRAP]
        url = f"nats://bootstrap:{secret}@127.0.0.1:{started[0].port}"
        settings = NatsSettings(url=url, stream_replicas=3)
        creating = asyncio.create_task(bootstrap.create_streams(settings))
        await asyncio.sleep(2)  # long enough to have asked, and been turned away, at least once
        assert not creating.done(), "no quorum, no streams"
        for name, member in zip(names[1:], members[1:], strict=True):
            started.append(local.start_nats(tmp_path, name=name, cluster=member))
        await asyncio.wait_for(creating, timeout=90)
    finally:
        local.stop_all(started)
