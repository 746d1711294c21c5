"""Composition root of the controller: `build` makes its parts over the ports it is given (the bus,
the store, the Kubernetes API, a clock); `run` makes the real ports and runs what `build` made.
The controller primes the cache from the API, then follows the streams.

Start-up is level-triggered: the cache is filled by listing the API, every job is synced and every
pending Command handled, and only then are `cluster.*` and `decisions.*` consumed (durably, so
nothing published meanwhile is lost). A periodic resync repairs whatever a lost write left behind.

Replicas (docs/scaling.md): each takes its shards of the job-key space (shard_leases.py) before it
syncs, syncs only the jobs of those, and syncs again whatever shards it takes later. Decisions
about another replica's jobs are kept for a while (`HeldDecisions`), so that a shard taken over
from a replica that died with a decision unfinished carries that decision out. A decision that
waited while a newer one of its gang was published is skipped (superseded.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections import deque
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from kubernetes_asyncio import client
from sqlalchemy.ext.asyncio import AsyncEngine

from services.controller.cache import Cache
from services.controller.core.sharding import CLUSTER_KEY, JobKey, decision_key, job_key, shard_of
from services.controller.dispatch import Dispatcher
from services.controller.event_recorder import WRITERS as EVENT_WRITERS
from services.controller.gangs import GangKeeper
from services.controller.jobs import JobDriver
from services.controller.kube_writes import KubeWrites
from services.controller.metrics import count_podgroups_of
from services.controller.queue_keeper import QueueKeeper
from services.controller.settings import ControllerSettings
from services.controller.shard_leases import ShardLeases, ShardLost, acting_for
from services.controller.superseded import Supersession, skipping_superseded
from services.controller.topology_keeper import TopologyKeeper
from shared import tracing
from shared.bus.nats import NatsBus
from shared.bus.permissions import CONTROLLER_DECISIONS_DURABLE, replica_durable
from shared.bus.ports import Bus, ConsumerSpec
from shared.clock import Clock, SystemClock
from shared.kube.client import ApiError, make_api_client
from shared.messages import subjects
from shared.messages.cluster import KindResynced, ObjectChanged
from shared.messages.envelope import CloudEvent
from shared.runtime import Health
from shared.storage import tables
from shared.storage.engine import make_engine, make_sessions
from shared.storage.outbox import OutboxRelay
from shared.volcano.objects import JobObject, KubeObject, PodGroupObject

log = structlog.get_logger()
PRIMED_KINDS = (
    "PriorityClass",
    "Queue",
    "Job",
    "PodGroup",
    "Pod",
    "Command",
    "ReplicaSet",
    "StatefulSet",
    # HyperNode discovery from node labels, and each HyperNode's nodeCount (topology_keeper.py)
    "Node",
    "HyperNode",
)
# The ConfigMaps of volcano-system (the only ones watched): Volcano's controller configuration.
CLUSTER_SUBJECTS = [subjects.cluster_kind(kind) for kind in (*PRIMED_KINDS, "ConfigMap")]
# How long a decision about another replica's job is kept, in case its shard comes here: longer
# than a decision may wait to be carried out (the scheduler's decision time-to-live).
HELD_DECISION_SECONDS = 120.0


def build(
    settings: ControllerSettings,
    *,
    bus: Bus,
    store: AsyncEngine,
    kube: client.ApiClient,
    clock: Clock,
    binds: client.ApiClient | None = None,
    events: client.ApiClient | None = None,
) -> Controller:
    """The controller's parts over the ports it is given, each built once and complete. `binds`,
    a second client onto the same API, carries the binds on connections of their own, so they
    never queue behind pod creates and their webhooks (kube_writes.py); `events`, a third, the
    Events, so they never take a connection from either; without them, `kube` does."""
    sessions = make_sessions(store)
    relay = OutboxRelay(sessions, tables.ControllerOutbox, bus)
    leases = ShardLeases(
        sessions,
        holder=settings.holder or f"{socket.gethostname()}/controller-{settings.replica}",
        shards=settings.shards,
        lease_seconds=settings.shard_lease_seconds,
    )
    # Every path that reacts or writes asks the leases first (shard_leases.py).
    acts_for = leases.acts_for
    cache = Cache()
    # A write's response is routed like a watch event, by the dispatcher that the writers are
    # part of: the callback looks it up when a write happens, which is after `build` returns.
    writes = KubeWrites(kube, lambda written: dispatcher.written(written), binds=binds, events=events)
    writes.guard = leases.guard
    jobs = JobDriver(
        cache,
        writes,
        sessions,
        clock=clock,
        on_committed=relay.kick,
        acts_for_job=lambda job: acts_for(job_key("Job", job)),
    )
    gangs = GangKeeper(
        cache,
        writes,
        sessions,
        scheduler_names=settings.scheduler_names,
        on_committed=relay.kick,
        acts_for_group=lambda podgroup: acts_for(job_key("PodGroup", podgroup)),
    )
    dispatcher = Dispatcher(
        cache,
        jobs=jobs,
        gangs=gangs,
        queues=QueueKeeper(cache, writes, sessions, job_command=jobs.command_issued),
        topology=TopologyKeeper(cache, writes, acts=lambda: acts_for(CLUSTER_KEY)),
        acts_for=acts_for,
    )
    return Controller(settings, bus, writes, relay, dispatcher, leases)


async def run(settings: ControllerSettings, health: Health) -> None:
    """Make the real ports (NATS, PostgreSQL, the Kubernetes API), build the controller, run it."""
    bus = await NatsBus.connect(settings.nats, name="phalanx-controller")
    bus.health = health  # each consumer reports on /readyz whether it keeps up
    engine = make_engine(settings.postgres)
    api = await make_api_client(settings.kubeconfig)
    bind_api = await make_api_client(settings.kubeconfig)
    # A connection per Event writer: Events come after every create and bind (event_recorder.py).
    event_api = await make_api_client(settings.kubeconfig, connections=EVENT_WRITERS)
    controller = build(
        settings, bus=bus, store=engine, kube=api, clock=SystemClock(), binds=bind_api, events=event_api
    )
    # Every replica caches every PodGroup: one reports them, the cluster-scoped shard's holder.
    count_podgroups_of(controller.cache, reports=lambda: controller.leases.acts_for(CLUSTER_KEY))
    try:
        await controller.run(health)
    finally:
        await controller.stop()
        await api.close()
        await bind_api.close()
        await event_api.close()
        await engine.dispose()


class Controller:
    """The built controller: `run` primes the cache, takes its shards, syncs, then consumes."""

    def __init__(
        self,
        settings: ControllerSettings,
        bus: Bus,
        kube: KubeWrites,
        relay: OutboxRelay,
        dispatcher: Dispatcher,
        leases: ShardLeases,
    ) -> None:
        self.settings = settings
        self.bus = bus
        self.kube = kube
        self.relay = relay
        self.dispatcher = dispatcher
        self.cache = dispatcher.cache
        self.leases = leases
        self.held = HeldDecisions(HELD_DECISION_SECONDS)
        self._decided = skipping_superseded(Supersession(bus), _traced_decisions(dispatcher.gangs.decided))
        leases.on_gained = self._gained
        leases.on_turned_away = self._turned_away

    async def run(self, health: Health) -> None:
        """Start in order (level-triggered: list, sync, then consume) and run until cancelled."""
        dispatcher, leases, settings = self.dispatcher, self.leases, self.settings
        tasks: list[asyncio.Task[Any]] = []
        try:
            await self.bus.ensure_streams()
            tasks.append(asyncio.create_task(self.relay.run()))
            await _prime(self.cache, self.kube)
            await leases.join()  # this replica's shards first: it syncs only their jobs
            # Renewed from now on, so that a long first sync does not outlast the leases.
            tasks.append(asyncio.create_task(leases.run()))
            await dispatcher.queues.ensure_builtin_queues()
            await dispatcher.jobs.restore_timers()
            if dispatcher.topology is not None:
                await dispatcher.topology.start()
            await _resync(dispatcher, leases.acts_for)
            durable = replica_durable("controller", settings.replica)
            self.bus.consume(
                ConsumerSpec(subjects.CLUSTER_STREAM, durable, CLUSTER_SUBJECTS), self._on_cluster
            )
            self.bus.consume(
                ConsumerSpec(
                    subjects.DECISIONS_STREAM,
                    replica_durable(CONTROLLER_DECISIONS_DURABLE, settings.replica),
                    [subjects.all_decisions()],
                ),
                self._on_decision,
            )
            tasks.append(asyncio.create_task(_resync_forever(dispatcher, settings.resync_seconds)))
            health.set_ready()
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def stop(self) -> None:
        """Stop consuming (the bus is closed), then give the shards up for the other replicas."""
        await self.bus.close()
        await self.kube.events.close()  # Events still queued are dropped: they are best effort
        with contextlib.suppress(Exception):  # else the others wait the leases out
            await self.leases.release()

    async def _gained(self, shards: frozenset[int]) -> None:
        """Shards taken over: their jobs are synced from the cache (level-triggered), and the
        decisions about them that this replica saw while another held them are carried out."""
        await self._catch_up(lambda key: shard_of(key, self.leases.shards) in shards)

    async def _turned_away(self, keys: frozenset[JobKey]) -> None:
        """Jobs whose events, timers or decisions were turned away while this replica's leases
        had lapsed, and which are still ours: the same catch-up, for those jobs only."""
        log.info("jobs turned away while the shard leases had lapsed: syncing them again", jobs=len(keys))
        await self._catch_up(keys.__contains__)

    async def _catch_up(self, wanted: Callable[[JobKey], bool]) -> None:
        # Timers first: one that fired while its job was turned away is still stored, unfired.
        await self.dispatcher.jobs.restore_timers()
        await _resync(self.dispatcher, wanted)
        if wanted(CLUSTER_KEY):
            self.dispatcher.topology_gained()  # HyperNode discovery is the cluster-scoped shard's work
        for key, event in self.held.take(wanted):
            with acting_for(key):
                await _logged_decision(self._decided, event)

    async def _on_cluster(self, event: CloudEvent[Any]) -> None:
        data = event.data
        if isinstance(data, ObjectChanged) and data.kind == "ConfigMap":
            self.dispatcher.topology_config(data.object, deleted=data.change == "DELETED")
        elif isinstance(data, ObjectChanged):
            obj: dict[str, Any] | None = data.object
            if not data.complete and data.change != "DELETED":
                # Too large for the bus, published as a reference: the API has the body.
                obj = await self.kube.get(data.kind, data.namespace, data.name)
            if obj is not None:  # None: deleted since, and its DELETED event follows
                started = time.time_ns()
                await self.dispatcher.observe(data.kind, obj, deleted=data.change == "DELETED")
                tracing.step(
                    f"controller: {data.kind} {data.change}",
                    event.traceparent,
                    {"k8s.object": f"{data.namespace}/{data.name}"},
                    started_ns=started,
                )
        elif isinstance(data, KindResynced) and data.kind in PRIMED_KINDS:
            await self.dispatcher.relisted(data.kind, *await self.kube.list(data.kind))

    async def _on_decision(self, event: CloudEvent[Any]) -> None:
        data = event.data
        podgroup = self.cache.get("PodGroup", (data.namespace, data.podgroup))
        key = decision_key(data.namespace, podgroup, data.podgroup)
        if not self.leases.acts_for(key):
            # Kept even a while past its time: a gang decision whose binds began (this replica's
            # own, cut short when its lease lapsed on a starved machine) is finished whenever the
            # shard comes back (gangs.py, `_begun`), or the gang stays partly bound. One long past
            # its time (a new replica reads the stream from its start) is not worth keeping.
            kept_since = datetime.now(UTC) - timedelta(seconds=HELD_DECISION_SECONDS)
            if data.valid_until is None or data.valid_until > kept_since:
                self.held.keep(key, event)
            return
        with acting_for(key):
            await self._decided(event)


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


class HeldDecisions:
    """Decisions about other replicas' jobs, newest last, kept for `seconds`: a replica that dies
    after its consumer took a decision and before it was carried out leaves it to the next
    holder of the shard, which saw it too. Fences and the leader check still judge it then."""

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self._kept: deque[tuple[float, JobKey, CloudEvent[Any]]] = deque()

    def keep(self, key: JobKey, event: CloudEvent[Any]) -> None:
        now = time.monotonic()
        self._kept.append((now, key, event))
        while self._kept and self._kept[0][0] < now - self._seconds:
            self._kept.popleft()

    def take(self, wanted: Callable[[JobKey], bool]) -> list[tuple[JobKey, CloudEvent[Any]]]:
        taken = [(key, event) for _, key, event in self._kept if wanted(key)]
        self._kept = deque(kept for kept in self._kept if not wanted(kept[1]))
        return taken


async def _logged_decision(
    decided: Callable[[CloudEvent[Any]], Awaitable[None]], event: CloudEvent[Any]
) -> None:
    try:
        await decided(event)
    except Exception as error:  # the scheduler decides again for a gang left unconfirmed
        log.warning("held decision failed", decision=event.type, error=repr(error))


async def _prime(cache: Cache, kube: KubeWrites) -> None:
    for kind in PRIMED_KINDS:
        objects, listed_version = await kube.list(kind)
        cache.prime(kind, objects, listed_version)


async def _resync(dispatcher: Dispatcher, wanted: Callable[[JobKey], bool]) -> None:
    """Sync every job, PodGroup, plain pod, Command and Queue whose job key is `wanted`."""
    cache = dispatcher.cache

    def ours(kind: str) -> list[tuple[JobKey, dict[str, Any]]]:
        keyed = ((job_key(kind, obj), obj) for obj in cache.all(kind))
        return [(key, obj) for key, obj in keyed if wanted(key)]

    jobs = dispatcher.jobs
    await asyncio.gather(*(_as(key, jobs.recover(JobObject(job).uid)) for key, job in ours("Job")))
    for key, podgroup in ours("PodGroup"):
        group = PodGroupObject(podgroup)
        with acting_for(key):
            await dispatcher.gangs.group_changed(group.namespace, group.name)
    # One object that cannot be synced now must not stop the controller from starting: the
    # periodic resync and the object's next event try it again.
    for key, pod in ours("Pod"):
        await _logged(key, dispatcher.gangs.pod_added(pod), "Pod", pod)
    for key, command in ours("Command"):
        await _logged(key, dispatcher.queues.command_added(command), "Command", command)
    if wanted(CLUSTER_KEY):
        for queue in cache.all("Queue"):
            await _logged(CLUSTER_KEY, dispatcher.queues.queue_changed(queue), "Queue", queue)


async def _as(key: JobKey, sync: Awaitable[None]) -> None:
    try:
        with acting_for(key):
            await sync
    except ShardLost as lost:  # taken over meanwhile: the new holder syncs it
        log.info("sync stopped", reason=str(lost))


async def _logged(key: JobKey, sync: Awaitable[None], kind: str, obj: dict[str, Any]) -> None:
    try:
        with acting_for(key):
            await sync
    except (ApiError, ShardLost) as error:
        log.warning("resync failed", kind=kind, name=KubeObject(obj).name, error=str(error))


async def _resync_forever(dispatcher: Dispatcher, period: float) -> None:
    while True:
        await asyncio.sleep(period)
        try:
            jobs = dispatcher.jobs
            every = dispatcher.cache.all("Job")
            await asyncio.gather(*(_as(job_key("Job", j), jobs.resync(JobObject(j).uid)) for j in every))
        except Exception:
            log.exception("resync failed")
