"""Composition root of the controller: prime the cache from the API, then follow the streams.

Start-up is level-triggered: the cache is filled by listing the API, every job is synced and every
pending Command handled, and only then are `cluster.*` and `decisions.*` consumed (durably, so
nothing published meanwhile is lost). A periodic resync repairs whatever a lost write left behind.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import structlog

from services.controller.cache import Cache
from services.controller.dispatch import Dispatcher
from services.controller.gangs import GangKeeper
from services.controller.jobs import JobDriver
from services.controller.kube_writes import KubeWrites
from services.controller.metrics import count_podgroups_of
from services.controller.queue_keeper import QueueKeeper
from services.controller.settings import ControllerSettings
from shared import tracing
from shared.bus.nats import Bus, ConsumerSpec
from shared.clock import SystemClock
from shared.kube.client import ApiError, make_api_client
from shared.messages import subjects
from shared.messages.cluster import KindResynced, ObjectChanged
from shared.messages.envelope import CloudEvent
from shared.runtime import Health
from shared.storage import tables
from shared.storage.engine import make_engine, make_sessions
from shared.storage.outbox import OutboxRelay

log = structlog.get_logger()
PRIMED_KINDS = ("PriorityClass", "Queue", "Job", "PodGroup", "Pod", "Command", "ReplicaSet", "StatefulSet")
CLUSTER_SUBJECTS = [f"cluster.{kind.lower()}.>" for kind in PRIMED_KINDS]


async def run(settings: ControllerSettings, health: Health) -> None:
    bus = await Bus.connect(settings.nats, name="phalanx-controller")
    bus.health = health  # each consumer reports on /readyz whether it keeps up
    engine = make_engine(settings.postgres)
    sessions = make_sessions(engine)
    api = await make_api_client(settings.kubeconfig)
    relay = OutboxRelay(sessions, tables.ControllerOutbox, bus)
    cache = Cache()
    count_podgroups_of(cache)
    dispatcher = Dispatcher(cache)
    kube = KubeWrites(api, dispatcher.written)
    dispatcher.jobs = JobDriver(cache, kube, sessions, clock=SystemClock(), on_committed=relay.kick)
    dispatcher.gangs = GangKeeper(
        cache, kube, sessions, scheduler_names=settings.scheduler_names, on_committed=relay.kick
    )
    dispatcher.queues = QueueKeeper(cache, kube, sessions, job_command=dispatcher.jobs.command_issued)
    tasks: list[asyncio.Task[Any]] = []
    try:
        await bus.ensure_streams()
        tasks.append(asyncio.create_task(relay.run()))
        await _prime(cache, kube)
        await dispatcher.queues.ensure_builtin_queues()
        await dispatcher.jobs.restore_timers()
        await _resync(dispatcher)

        async def on_cluster(event: CloudEvent[Any]) -> None:
            data = event.data
            if isinstance(data, ObjectChanged):
                obj: dict[str, Any] | None = data.object
                if not data.complete and data.change != "DELETED":
                    # Too large for the bus, published as a reference: the API has the body.
                    obj = await kube.get(data.kind, data.namespace, data.name)
                if obj is not None:  # None: deleted since, and its DELETED event follows
                    started = time.time_ns()
                    await dispatcher.observe(data.kind, obj, deleted=data.change == "DELETED")
                    tracing.step(
                        f"controller: {data.kind} {data.change}",
                        event.traceparent,
                        {"k8s.object": f"{data.namespace}/{data.name}"},
                        started_ns=started,
                    )
            elif isinstance(data, KindResynced) and data.kind in PRIMED_KINDS:
                await dispatcher.relisted(data.kind, *await kube.list(data.kind))

        bus.consume(ConsumerSpec(subjects.CLUSTER_STREAM, "controller", CLUSTER_SUBJECTS), on_cluster)
        bus.consume(
            ConsumerSpec(subjects.DECISIONS_STREAM, "controller-decisions", ["decisions.>"]),
            _traced_decisions(dispatcher.gangs.decided),
        )
        tasks.append(asyncio.create_task(_resync_forever(dispatcher, settings.resync_seconds)))
        health.set_ready()
        await asyncio.gather(*tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await bus.close()
        await api.close()
        await engine.dispose()


def _traced_decisions(
    handle: Callable[[CloudEvent[Any]], Awaitable[None]],
) -> Callable[[CloudEvent[Any]], Awaitable[None]]:
    """The decision consumer, recording each decision on a traced gang as a step of its trace."""

    async def decided(event: CloudEvent[Any]) -> None:
        started = time.time_ns()
        await handle(event)
        tracing.step(
            f"controller: {type(event.data).__name__}",
            event.traceparent,
            {"phalanx.gang": f"{event.data.namespace}/{event.data.podgroup}"},
            started_ns=started,
        )

    return decided


async def _prime(cache: Cache, kube: KubeWrites) -> None:
    for kind in PRIMED_KINDS:
        objects, listed_version = await kube.list(kind)
        cache.prime(kind, objects, listed_version)


async def _resync(dispatcher: Dispatcher) -> None:
    assert dispatcher.jobs is not None
    assert dispatcher.gangs is not None
    assert dispatcher.queues is not None
    cache = dispatcher.cache
    await asyncio.gather(*(dispatcher.jobs.recover(j["metadata"]["uid"]) for j in cache.all("Job")))
    for podgroup in cache.all("PodGroup"):
        meta = podgroup["metadata"]
        await dispatcher.gangs.group_changed(meta.get("namespace", ""), meta["name"])
    # One object that cannot be synced now must not stop the controller from starting: the
    # periodic resync and the object's next event try it again.
    for pod in cache.all("Pod"):
        await _logged(dispatcher.gangs.pod_added(pod), "Pod", pod)
    for command in cache.all("Command"):
        await _logged(dispatcher.queues.command_added(command), "Command", command)
    for queue in cache.all("Queue"):
        await _logged(dispatcher.queues.queue_changed(queue), "Queue", queue)


async def _logged(sync: Awaitable[None], kind: str, obj: dict[str, Any]) -> None:
    try:
        await sync
    except ApiError as error:
        log.warning("resync failed", kind=kind, name=obj["metadata"].get("name"), error=str(error))


async def _resync_forever(dispatcher: Dispatcher, period: float) -> None:
    while True:
        await asyncio.sleep(period)
        try:
            assert dispatcher.jobs
            await asyncio.gather(
                *(dispatcher.jobs.resync(j["metadata"]["uid"]) for j in dispatcher.cache.all("Job"))
            )
        except Exception:
            log.exception("resync failed")
