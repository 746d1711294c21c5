"""Least privilege on the bus, against the real nats-server the fixtures start with Phalanx's users.

Who may publish what (shared/bus/permissions.py) is enforced by the server: a client without
credentials is turned away, the watcher cannot forge scheduler decisions, the auditor only reads,
and each service can still do its own work (publish its subjects, consume its durable).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import nats
import pytest
from nats.aio.client import Client

from shared.bus import permissions
from shared.bus.credentials import connect_options
from shared.bus.nats import NatsBus
from shared.bus.ports import ConsumerSpec
from shared.config import NatsSettings
from shared.domain.errors import PermanentError
from shared.infra import provision
from shared.messages import jobs, subjects
from shared.messages.envelope import CloudEvent, decode, new_event
from tests.waiting import until

pytestmark = pytest.mark.integration
# A request the server does not let through gets no answer.
DENIED = (nats.errors.TimeoutError, nats.errors.NoRespondersError)


@pytest.fixture
async def identities(nats_provided: provision.Provided, nats_url: str) -> AsyncIterator[provision.Provided]:
    """The server's identities, with the streams made by the bootstrap identity (as `phalanx up` does)."""
    if not nats_provided.credentials:
        pytest.skip("the NATS server comes from the environment: its authorization is not ours")
    bus = await NatsBus.connect(NatsSettings(url=nats_url), name="bootstrap")
    await bus.ensure_streams()
    yield nats_provided
    await bus.close()


def settings_of(provided: provision.Provided, role: str) -> NatsSettings:
    user, password = provided.credentials[role]
    return NatsSettings(url=provided.url, user=user, password=password, manage_streams=False)


async def connect_watching_errors(settings: NatsSettings) -> tuple[Client, list[str]]:
    refusals: list[str] = []

    async def on_error(error: Exception) -> None:
        refusals.append(str(error))

    client = await nats.connect(**connect_options(settings), error_cb=on_error, allow_reconnect=False)
    return client, refusals


async def stream_messages(provided: provision.Provided, stream: str) -> int:
    client = await nats.connect(provided.url_as(permissions.BOOTSTRAP))
    try:
        return (await client.jetstream().stream_info(stream)).state.messages
    finally:
        await client.close()


def decision_event() -> CloudEvent[jobs.JobPhaseChanged]:
    data = jobs.JobPhaseChanged(
        namespace="default", name="forged", uid="uid-forged", previous=None, phase="Running"
    )
    return new_event(data, source="forger")


async def test_a_client_without_credentials_is_refused(identities: provision.Provided) -> None:
    client = Client()
    try:
        with pytest.raises(Exception, match=r"(?i)authorization"):
            await client.connect(
                identities.url, allow_reconnect=False, max_reconnect_attempts=0, connect_timeout=3
            )
    finally:
        await client.close()  # nats-py leaves a refused first connection's socket open


async def test_the_watcher_cannot_publish_decisions(identities: provision.Provided) -> None:
    client, refusals = await connect_watching_errors(settings_of(identities, "watcher"))
    try:
        with pytest.raises(nats.errors.TimeoutError):
            await client.jetstream().publish(
                subjects.decision("default", "forged"), decision_event().to_bytes(), timeout=2
            )
    finally:
        await client.close()
    assert any("permissions violation" in r.lower() and "decisions.default.forged" in r for r in refusals)
    assert await stream_messages(identities, subjects.DECISIONS_STREAM) == 0


async def test_each_service_publishes_its_own_subjects(identities: provision.Provided) -> None:
    scheduler = await NatsBus.connect(settings_of(identities, "scheduler"), name="scheduler")
    watcher = await NatsBus.connect(settings_of(identities, "watcher"), name="watcher")
    try:
        await scheduler.ensure_streams()  # only looks the streams up: this identity may not create them
        await scheduler.publish(subjects.decision("default", "real"), decision_event())
        await scheduler.publish(subjects.audit("scheduler", "placed", "default", "real"), decision_event())
        await watcher.publish(subjects.cluster_object("Pod", "default", "p"), decision_event())
    finally:
        await scheduler.close()
        await watcher.close()
    assert await stream_messages(identities, subjects.DECISIONS_STREAM) == 1
    assert await stream_messages(identities, subjects.AUDIT_STREAM) == 1
    assert await stream_messages(identities, subjects.CLUSTER_STREAM) == 1


async def test_a_service_cannot_audit_as_another_or_touch_streams(identities: provision.Provided) -> None:
    client, refusals = await connect_watching_errors(settings_of(identities, "admission"))
    try:
        js = client.jetstream(timeout=2)
        with pytest.raises(nats.errors.TimeoutError):
            await js.publish(subjects.audit("scheduler", "placed", "default", "x"), b"{}", timeout=2)
        with pytest.raises(nats.errors.TimeoutError):
            await js.delete_stream(subjects.DECISIONS_STREAM)
    finally:
        await client.close()
    assert any("audit.scheduler.placed" in r for r in refusals)
    assert any("$js.api.stream.delete.decisions" in r.lower() for r in refusals), refusals
    assert await stream_messages(identities, subjects.DECISIONS_STREAM) == 0  # and still there


async def test_the_controller_consumes_decisions_and_the_auditor_only_reads(
    identities: provision.Provided,
) -> None:
    scheduler = await NatsBus.connect(settings_of(identities, "scheduler"), name="scheduler")
    controller = await NatsBus.connect(settings_of(identities, "controller"), name="controller")
    auditor, refusals = await connect_watching_errors(settings_of(identities, permissions.AUDITOR))
    received: list[str] = []

    async def handle(event: CloudEvent[object]) -> None:
        received.append(event.id)

    try:
        event = decision_event()
        await scheduler.publish(subjects.decision("default", "g"), event)
        await scheduler.publish(subjects.audit("scheduler", "placed", "default", "g"), event)
        controller.consume(
            ConsumerSpec(subjects.DECISIONS_STREAM, "controller-decisions", ["decisions.>"]), handle
        )
        js = auditor.jetstream(timeout=3)
        audit = await js.subscribe("audit.>", ordered_consumer=True)
        message = await audit.next_msg(timeout=5)
        assert message.subject == "audit.scheduler.placed.default.g"
        with pytest.raises(nats.errors.TimeoutError):
            await js.publish("audit.scheduler.placed.default.g", b"{}", timeout=2)
        await until(lambda: received, "the controller received the decision")
    finally:
        await auditor.close()
        await scheduler.close()
        await controller.close()
    assert received == [event.id]
    assert any("audit.scheduler.placed" in r for r in refusals)


async def test_the_scheduler_sees_the_controllers_lag_and_the_controller_the_newest_decision(
    identities: provision.Provided,
) -> None:
    """Issue #15's back-pressure and supersession: the scheduler may read how far the controller's
    decisions consumer lags, and the controller the newest decision of a gang, each with its own
    identity; the watcher may read neither."""
    scheduler = await NatsBus.connect(settings_of(identities, "scheduler"), name="scheduler")
    controller = await NatsBus.connect(settings_of(identities, "controller"), name="controller")
    watcher = await NatsBus.connect(settings_of(identities, "watcher"), name="watcher")
    try:
        event = decision_event()
        subject = subjects.decision("default", "g")
        await scheduler.publish(subject, event)
        durable = permissions.CONTROLLER_DECISIONS_DURABLE
        await controller.js.add_consumer(
            subjects.DECISIONS_STREAM, durable_name=durable, filter_subject=subjects.all_decisions()
        )
        lag = await scheduler.progress(subjects.DECISIONS_STREAM, durable)  # what decision_backlog.py reads
        assert lag.pending == 1
        newest = await controller.last_message(subjects.DECISIONS_STREAM, subject)  # superseded.py's read
        assert newest is not None
        assert decode(newest).id == event.id
        with pytest.raises(DENIED):
            await watcher.js.consumer_info(subjects.DECISIONS_STREAM, durable, timeout=2)
        with pytest.raises(DENIED):
            await watcher.js.get_last_msg(subjects.DECISIONS_STREAM, subject)
    finally:
        await watcher.close()
        await scheduler.close()
        await controller.close()


async def test_a_service_waits_for_the_bootstrap_to_create_the_streams(
    nats_provided: provision.Provided, nats_url: str
) -> None:
    if not nats_provided.credentials:
        pytest.skip("the NATS server comes from the environment: its authorization is not ours")
    watcher = await NatsBus.connect(settings_of(nats_provided, "watcher"), name="watcher")
    bootstrap = await NatsBus.connect(NatsSettings(url=nats_url), name="bootstrap")
    try:
        waiting = asyncio.create_task(watcher.await_streams(poll=0.05))
        await asyncio.sleep(0.3)
        assert not waiting.done()  # no streams yet, and the watcher may not create them
        await bootstrap.ensure_streams()
        await asyncio.wait_for(waiting, timeout=10)
    finally:
        await watcher.close()
        await bootstrap.close()


async def test_a_consumer_dead_letters_under_its_own_name(identities: provision.Provided) -> None:
    scheduler = await NatsBus.connect(settings_of(identities, "scheduler"), name="scheduler")
    controller = await NatsBus.connect(settings_of(identities, "controller"), name="controller")

    async def refuse(event: CloudEvent[object]) -> None:
        raise PermanentError("not for us")

    try:
        await scheduler.publish(subjects.decision("default", "poison"), decision_event())
        stats = controller.consume(
            ConsumerSpec(subjects.DECISIONS_STREAM, "controller-decisions", ["decisions.>"]), refuse
        )
        await until(lambda: stats.dead_lettered, "the refused decision dead-lettered")
    finally:
        await scheduler.close()
        await controller.close()
    assert stats.dead_lettered == 1
    assert await stream_messages(identities, subjects.DEADLETTER_STREAM) == 1
