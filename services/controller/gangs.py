"""Shell: carry out the scheduler's decisions and keep every PodGroup's status.

Decisions arrive on `decisions.*`, one message per gang. Each is checked against the scheduler's
lease row first: one not of the leading epoch, or past its time to be carried out, is refused and
audited (leader_check.py). A placement's time is checked once, before its first bind is sent (the
gang's decision *begins*); once begun, every bind of it is carried out however late, so no gang is
left half bound (the scheduler keeps counting a begun decision's binds, decision_expiry.py). A
bind waiting for a free connection is checked again once it has one, before a byte is sent. A
redelivered placement past its time has begun when one of its pods is already bound where it
says: it is completed. Then it is fenced: a gang's decisions from an older scheduler epoch
than one already acted on are ignored (fences.py). Placing binds every
pod of the gang concurrently (a pod already bound to that node counts as done); enqueueing moves
the PodGroup to Inqueue so its job's pods get created; an unschedulable verdict becomes the
PodGroup's Unschedulable condition with Volcano's message; evicting goes through pods/eviction
(evictions.py: a disruption budget's 429 is retried, then reported).
PodGroup phase and counters follow its pods, written by podgroup_status_writes.py; plain pods
that ask for our scheduler get a PodGroup of their own (plain_pods.py). The dispatcher reaches
both through this keeper.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from typing import Any, Literal

import structlog
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.controller.cache import Cache
from services.controller.claims import ALLOCATED, allocate_claims
from services.controller.core.gang_events import victim_events
from services.controller.evictions import Evictor
from services.controller.fences import DecisionFences
from services.controller.kube_writes import KubeWrites
from services.controller.leader_check import LeaderCheck
from services.controller.metrics import DECISIONS_REFUSED
from services.controller.plain_pods import PlainPodGroups
from services.controller.podgroup_status_writes import PodGroupStatusWrites, new_condition
from shared import failpoints
from shared.batching import Batcher
from shared.kube.client import NotSent, send_only_if
from shared.messages import decisions as msg
from shared.messages.audit import AuditRecorded, audit_event
from shared.messages.envelope import CloudEvent
from shared.storage import tables
from shared.storage.unit_of_work import unit_of_work
from shared.volcano.keys import JOB_ALLOCATED_HYPERNODE as ALLOCATED_HYPERNODE
from shared.volcano.keys import PREDICTED_START
from shared.volcano.objects import KubeObject, PodGroupObject, PodObject

log = structlog.get_logger()
Json = dict[str, Any]
SOURCE = "phalanx/controller"
BIND_CONCURRENCY = 64
# The source Volcano's scheduler gives its Events (its name, when it serves one scheduler name).
SCHEDULER_COMPONENT = "volcano"
# gang's JobValid reasons: a gang whose pods are not all created yet. Volcano leaves such a job
# out of the session (only its PodGroup condition says why), so its pods get no FailedScheduling
# Event; here that also spares a Job's pods an Event each time one more of them is created.
GANG_NOT_VALID = frozenset({"NotEnoughTasks", "NotEnoughPodsOfTask"})


class GangKeeper:
    def __init__(
        self,
        cache: Cache,
        kube: KubeWrites,
        sessions: async_sessionmaker[AsyncSession],
        *,
        scheduler_names: Collection[str],
        on_committed: Callable[[], None],
        acts_for_group: Callable[[Json], bool] | None = None,
    ) -> None:
        self._cache = cache
        self._kube = kube
        self._sessions = sessions
        self._on_committed = on_committed
        self._bind_slots = asyncio.Semaphore(BIND_CONCURRENCY)
        self._fences = DecisionFences(sessions)
        self._evictor = Evictor(kube)
        self._leader = LeaderCheck(sessions)
        # The audit rows of decisions carried out together share one transaction.
        self._audits = Batcher(self._write_audits)
        self._status = PodGroupStatusWrites(cache, kube)
        if acts_for_group is not None:  # a sharded replica writes its shards' PodGroups only
            self._status.acts_for_group = acts_for_group
        self._plain_pods = PlainPodGroups(cache, kube, scheduler_names=scheduler_names)

    # -- decisions ---------------------------------------------------------------------------------

    async def decided(self, event: CloudEvent[Any]) -> None:
        data = event.data
        # The lease row first: a forged epoch must not reach the fences, where it would make
        # every later decision of the real leader look stale.
        refusal = await self._leader.refusal(data.epoch, data.valid_until)
        begun = False
        if refusal is not None and refusal[0] == "expired" and isinstance(data, msg.GangPlaced):
            # Only expiry yields to a begun decision; a stale or forged epoch never does.
            begun = await self._begun(data)
            if begun:
                log.info("completing a begun decision past its time", gang=data.podgroup, epoch=data.epoch)
                refusal = None
        if refusal is not None:
            reason, message = refusal
            DECISIONS_REFUSED.labels(reason).inc()
            log.warning("decision refused", gang=data.podgroup, epoch=data.epoch, reason=reason)
            await self._audit(
                "decision-refused",
                data,
                outcome="denied",
                reason=reason,
                message=message,
                details={"decision": event.type},
            )
            return
        if not await self._fences.fresh(data.gang_uid, data.epoch, data.cycle):
            DECISIONS_REFUSED.labels("stale").inc()
            log.info("stale decision ignored", gang=data.podgroup, epoch=data.epoch)
            return
        match data:
            case msg.GangPlaced():
                await self._place(data, begun=begun)
            case msg.GangEnqueued():
                self._status.soon(data.namespace, data.podgroup, admitted=True)
            case msg.GangUnschedulable():
                self._status.soon(
                    data.namespace,
                    data.podgroup,
                    condition=new_condition("Unschedulable", data.condition_reason, data.message),
                )
                if data.condition_reason not in GANG_NOT_VALID:
                    self._failed_scheduling(data)
                await self._predicted_start(data)
            case msg.PodsEvicted():
                await self._evict(data)

    async def _begun(self, data: msg.GangPlaced) -> bool:
        """Whether any pod of the decision is already bound where it says (level-triggered: the
        cache, or the API for a pod the cache does not hold yet), so its gang decision began."""
        for b in data.binds:
            pod = self._cache.get("Pod", (b.namespace, b.name)) or await self._kube.get(
                "Pod", b.namespace, b.name
            )
            found = PodObject(pod or {})
            if found.uid == b.uid and found.node_name == b.node:
                return True
        return False

    async def _place(self, data: msg.GangPlaced, *, begun: bool = False) -> None:
        async def bind(index: int, b: msg.PodBinding) -> str:
            nonlocal begun
            if index:  # a fault test holds back all but the gang's first bind here
                await failpoints.hit("ctl.mid_bind_batch")
            async with self._bind_slots:
                # The wait for a slot, or for a connection after it, may outlast the decision.
                # Until its first bind is sent, a decision past valid_until is refused whole (the
                # scheduler may no longer count it): asked here, and again once the bind holds a
                # connection, just before it is written. From then on it has begun and every bind
                # is sent, however late.
                if not begun and self._leader.expired(data.valid_until):
                    return "expired"
                if b.devices:  # DRA: the claims are allocated before the pod is bound (claims.py)
                    allocated = await allocate_claims(self._kube, b)
                    if allocated != ALLOCATED:
                        return allocated

                def in_time() -> bool:
                    nonlocal begun
                    begun = begun or not self._leader.expired(data.valid_until)
                    return begun

                checked = send_only_if.set(in_time)
                try:
                    return await self._kube.bind(b.namespace, b.name, b.node, b.uid)
                except NotSent:
                    return "expired"
                finally:
                    send_only_if.reset(checked)

        with self._status.placing(data.namespace, data.podgroup):
            outcomes = await asyncio.gather(*(bind(i, b) for i, b in enumerate(data.binds)))
        bound = [b for b, o in zip(data.binds, outcomes, strict=True) if o in ("bound", "already")]
        refused = {
            b.name: o for b, o in zip(data.binds, outcomes, strict=True) if o not in ("bound", "already")
        }
        if refused:
            log.warning("some binds were not carried out", gang=data.podgroup, refused=refused)
        # kube-scheduler's event on each pod it binds; a redelivered decision ("already") adds none.
        for b, outcome in zip(data.binds, outcomes, strict=True):
            if outcome == "bound":
                self._kube.events.soon(
                    _pod_ref(b.namespace, b.name, b.uid),
                    type_="Normal",
                    reason="Scheduled",
                    message=f"Successfully assigned {b.namespace}/{b.name} to {b.node}",
                    component=SCHEDULER_COMPONENT,
                )
        # One status write for the placement: admitted (a placement is an admission too), the
        # Scheduled condition, and the pods just bound counted before their watch events come.
        self._status.soon(
            data.namespace,
            data.podgroup,
            admitted=True,
            condition=new_condition("Scheduled", "tasks in gang are ready to be scheduled", ""),
            bound={b.uid: b.node for b in bound},
        )
        if data.hypernode:
            await self._record_hypernode(data.namespace, data.podgroup, data.hypernode)
        await self._audit(
            "bound",
            data,
            outcome="done" if not refused else "failed",
            details={"pods": {b.name: b.node for b in bound}, "refused": refused},
        )

    async def _record_hypernode(self, namespace: str, podgroup: str, hypernode: str) -> None:
        """Volcano's volcano.sh/job-allocated-hypernode on the PodGroup: the domain the gang was
        given, where `kubectl get podgroup -o yaml` (and `phalanx job why`) show it."""
        current = self._cache.get("PodGroup", (namespace, podgroup))
        annotations = PodGroupObject(current or {}).annotations
        if current is None or annotations.get(ALLOCATED_HYPERNODE) == hypernode:
            return
        patch = {"metadata": {"annotations": {ALLOCATED_HYPERNODE: hypernode}}}
        await self._kube.patch("PodGroup", namespace, podgroup, patch)

    async def _predicted_start(self, data: msg.GangUnschedulable) -> None:
        """Reservation backfill's expected start, on the PodGroup where `kubectl get -o yaml` shows
        it; the scheduler reads it back to republish only a material change."""
        podgroup = self._cache.get("PodGroup", (data.namespace, data.podgroup))
        annotations = PodGroupObject(podgroup or {}).annotations
        if podgroup is None or annotations.get(PREDICTED_START, "") == data.predicted_start:
            return  # unchanged; and without reservation backfill there is none to write or remove
        value = data.predicted_start or None  # none foreseeable any more: the stale one goes
        await self._kube.patch(
            "PodGroup",
            data.namespace,
            data.podgroup,
            {"metadata": {"annotations": {PREDICTED_START: value}}},
        )

    def _failed_scheduling(self, data: msg.GangUnschedulable) -> None:
        """Volcano's FailedScheduling on each pod of the gang still waiting for a node.

        The scheduler announces a verdict only when its message changes, not every cycle, and
        the recorder counts repeats on one Event: a gang that waits long writes a handful."""
        for pod in self._cache.pods_in_group(data.namespace, data.podgroup):
            if not _waits_for_node(pod):
                continue
            self._kube.events.soon(
                pod,
                type_="Warning",
                reason="FailedScheduling",
                message=data.message,
                component=SCHEDULER_COMPONENT,
            )

    async def _evict(self, data: msg.PodsEvicted) -> None:
        # Read the pods before evicting them: the eviction deletes a pod, and once the watch has
        # dropped it from the cache there would be nothing to hang the Evict event on, leaving the
        # eviction invisible to users (and to `kubectl get events`).
        pods = {(e.namespace, e.name): self._cache.get("Pod", (e.namespace, e.name)) for e in data.evictions}
        podgroup = self._cache.get("PodGroup", (data.namespace, data.podgroup))
        preemptor = self._cache.by_uid("PodGroup", data.preemptor) if data.preemptor else None
        preemptor_name = _ident_of(preemptor) if preemptor is not None else data.preemptor

        async def warn(eviction: msg.PodEviction, reason: str, message: str) -> None:
            pod = pods[(eviction.namespace, eviction.name)]
            if pod is not None:
                await self._kube.record_event(
                    pod, type_="Warning", reason=reason, message=message, component=SCHEDULER_COMPONENT
                )

        async def evicted(eviction: msg.PodEviction) -> None:
            pod = pods[(eviction.namespace, eviction.name)]
            if pod is None:
                return
            for involved, type_, reason, message in victim_events(
                pod, podgroup, reason=eviction.reason, node=eviction.node, preemptor=preemptor_name
            ):
                await self._kube.record_event(
                    involved, type_=type_, reason=reason, message=message, component=SCHEDULER_COMPONENT
                )

        async def refused(eviction: msg.PodEviction, why: str) -> None:
            # Surfaced where users look: on the pod, and in the audit trail of its gang.
            await warn(eviction, "EvictionRefused", f"Pod could not be evicted for {eviction.reason}: {why}")
            await self._audit(
                "eviction-refused",
                data,
                outcome="denied",
                reason="DisruptionBudget",
                message=why,
                details={"pods": [eviction.name], "preemptor": data.preemptor},
            )

        outcomes = await self._evictor.evict_all(
            data.evictions, data.valid_until, on_evicted=evicted, on_refused=refused
        )
        for eviction, outcome in zip(data.evictions, outcomes, strict=True):
            if outcome == "evicted":
                await evicted(eviction)
        await self._audit(
            "evicted",
            data,
            details={
                "pods": [e.name for e, o in zip(data.evictions, outcomes, strict=True) if o == "evicted"],
                "preemptor": data.preemptor,
                **(
                    {
                        "refused": [
                            e.name for e, o in zip(data.evictions, outcomes, strict=True) if o == "refused"
                        ]
                    }
                    if "refused" in outcomes
                    else {}
                ),
            },
        )

    async def _audit(
        self,
        action: str,
        data: Any,
        *,
        outcome: Literal["done", "failed", "denied"] = "done",
        details: dict[str, Any],
        reason: str = "",
        message: str = "",
    ) -> None:
        podgroup = self._cache.get("PodGroup", (data.namespace, data.podgroup)) or {}
        queue = (podgroup.get("spec") or {}).get("queue")  # for `phalanx events watch --queue`
        audit = AuditRecorded(
            service="controller",
            action=action,
            kind="PodGroup",
            namespace=data.namespace,
            name=data.podgroup,
            uid=data.gang_uid,
            outcome=outcome,
            reason=reason,
            message=message,
            details={"queue": queue, **details} if queue else details,
        )
        # A refused eviction is recorded per pod, so each gets an id of its own (the bus drops
        # repeated ids as duplicates).
        pods = ",".join(details.get("pods") or []) if action == "eviction-refused" else ""
        event_id = f"audit:{action}:{data.epoch}:{data.cycle}:{data.gang_uid}" + (f":{pods}" if pods else "")
        await self._audits.submit(audit_event(audit, event_id=event_id))

    async def _write_audits(self, events: list[tuple[str, CloudEvent[Any]]]) -> list[None]:
        async with unit_of_work(self._sessions, tables.ControllerOutbox, wake=self._on_committed) as work:
            work.publish_all_after(events)
        return [None] * len(events)

    # -- PodGroup status and plain pods: kept by their own modules -----------------------------------

    async def group_changed(self, namespace: str, podgroup: str) -> None:
        """A member pod or the PodGroup changed: bring phase and counters up to date shortly.

        The update reads the cache when it runs, so one update covers every change before it. If
        the controller stops first, the periodic resync brings the status up to date.
        """
        self._status.soon(namespace, podgroup)

    async def pod_added(self, pod: Json) -> None:
        await self._plain_pods.pod_added(pod)

    async def workload_changed(self, workload: Json) -> None:
        await self._plain_pods.workload_changed(workload)


def _waits_for_node(pod: Json) -> bool:
    view = PodObject(pod)
    return not view.node_name and not view.deleting


def _pod_ref(namespace: str, name: str, uid: str) -> Json:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": namespace, "name": name, "uid": uid}}


def _ident_of(obj: dict[str, Any]) -> str:
    view = KubeObject(obj)
    return f"{view.meta.get('namespace')}/{view.meta.get('name')}"
