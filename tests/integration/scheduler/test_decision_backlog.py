"""The scheduler sees the controller's decision queue on real NATS (issue #15's back-pressure):
decisions published and not acknowledged by the controller's durable consumer hold new ones
back; once the controller has worked them off, nothing is held back. The consumer is asked only
when its answer could be "hold": not while the decisions published since the last answer keep
the backlog under the floor."""

from __future__ import annotations

import pytest

from services.scheduler.decision_backlog import DecisionBacklog
from shared.bus.nats import NatsBus
from shared.bus.permissions import CONTROLLER_DECISIONS_DURABLE
from shared.bus.ports import ConsumerSpec
from shared.config import NatsSettings
from shared.messages import decisions as msg
from shared.messages import subjects
from shared.messages.envelope import new_event
from tests.waiting import until

pytestmark = pytest.mark.integration


async def test_decisions_waiting_for_the_controller_hold_new_ones_back_until_worked_off(
    nats_url: str,
) -> None:
    bus = await NatsBus.connect(NatsSettings(url=nats_url), name="phalanx-scheduler")
    try:
        await bus.ensure_streams()
        backlog = DecisionBacklog(
            bus, stream=subjects.DECISIONS_STREAM, durable=CONTROLLER_DECISIONS_DURABLE, window=15, floor=5
        )
        assert not await backlog.held_back(), "no controller yet: nothing to wait for"

        spec = ConsumerSpec(
            subjects.DECISIONS_STREAM, CONTROLLER_DECISIONS_DURABLE, [subjects.all_decisions()]
        )
        await bus.js.add_consumer(
            spec.stream, durable_name=spec.durable, filter_subject=subjects.all_decisions()
        )
        for gang in range(10):  # the controller is down: they wait
            decision = msg.GangEnqueued(
                epoch=1, cycle=1, gang_uid=f"g{gang}", namespace="d", podgroup=f"g{gang}"
            )
            await bus.publish(subjects.decision("d", f"g{gang}"), new_event(decision, source="test"))
        assert await backlog.held_back(), "ten waiting and none worked off"

        handled: list[str] = []

        async def controller(event: object) -> None:
            handled.append("one")

        bus.consume(spec, controller)  # the controller comes back and works them off
        await until(lambda: len(handled) == 10, "the controller worked the backlog off")

        async def caught_up() -> bool:
            return not await backlog.held_back()

        await until(caught_up, "new decisions no longer held back")
    finally:
        await bus.close()


async def test_the_consumer_is_asked_only_when_the_answer_could_be_hold(nats_url: str) -> None:
    bus = await NatsBus.connect(NatsSettings(url=nats_url), name="phalanx-scheduler")
    try:
        await bus.ensure_streams()
        spec = ConsumerSpec(
            subjects.DECISIONS_STREAM, CONTROLLER_DECISIONS_DURABLE, [subjects.all_decisions()]
        )
        await bus.js.add_consumer(
            spec.stream, durable_name=spec.durable, filter_subject=subjects.all_decisions()
        )
        backlog = DecisionBacklog(
            bus, stream=subjects.DECISIONS_STREAM, durable=CONTROLLER_DECISIONS_DURABLE, window=15, floor=5
        )
        assert not await backlog.held_back(epoch=1)
        assert backlog.probes == 1, "nothing known yet: asked"
        assert not await backlog.held_back(epoch=1)
        assert backlog.probes == 1, "none waiting and none published since: nothing to ask"

        cycle = []
        for gang in range(6):  # one cycle's decisions, with the audit records that go along
            subject = subjects.decision("d", f"g{gang}")
            decision = msg.GangEnqueued(
                epoch=1, cycle=1, gang_uid=f"g{gang}", namespace="d", podgroup=f"g{gang}"
            )
            cycle += [
                (subject, decision),
                (subjects.audit("scheduler", "enqueued", "d", f"g{gang}"), decision),
            ]
            await bus.publish(subject, new_event(decision, source="test"))
            if gang == 4:  # five published: still at the floor, no probe could say "hold"
                backlog.published(cycle)
                assert not await backlog.held_back(epoch=1)
                assert backlog.probes == 1
                cycle = []
        backlog.published(cycle)  # the sixth: past the floor, and none worked off
        assert await backlog.held_back(epoch=1)
        assert backlog.probes == 2

        assert await backlog.held_back(epoch=2), "a new leadership asks at once"
        assert backlog.probes == 3
    finally:
        await bus.close()
