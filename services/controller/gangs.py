"""Shell: carry out the scheduler's decisions and keep every PodGroup's status.

Decisions arrive on `decisions.*`, one message per gang. Each is checked against the scheduler's
lease row first: one not of the leading epoch, or past its time to be carried out, is refused and
audited (leader_check.py). Then it is fenced: a gang's decisions from an older scheduler epoch
than one already acted on are ignored (fences.py). Placing binds every
pod of the gang concurrently (a pod already bound to that node counts as done); enqueueing moves
the PodGroup to Inqueue so its job's pods get created; an unschedulable verdict becomes the
PodGroup's Unschedulable condition with Volcano's message; evicting goes through pods/eviction
(evictions.py: a disruption budget's 429 is retried, then reported).
PodGroup phase and counters follow its pods (`podgroup_status`); plain pods that ask for our
scheduler get a PodGroup of their own.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import defaultdict
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from typing import Any, Literal

import structlog
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from services.controller.cache import GROUP_ANNOTATION, Cache, controller_uid
from services.controller.coalesce import Coalescer
from services.controller.core.gang_events import victim_events
from services.controller.core.owners import controller_of
from services.controller.core.podgroups import (
    PODGROUP_PREFIX,
    WORKLOAD_KINDS,
    group_annotation_patch,
    needs_podgroup,
    podgroup_for_pod,
    podgroup_status,
    workload_podgroup,
)
from services.controller.evictions import Evictor
from services.controller.fences import DecisionFences
from services.controller.kube_writes import KubeWrites
from services.controller.leader_check import LeaderCheck
from services.controller.metrics import DECISIONS_REFUSED
from shared import failpoints
from shared.batching import Batcher
from shared.messages import decisions as msg
from shared.messages import subjects
from shared.messages.audit import AuditRecorded
from shared.messages.envelope import CloudEvent, new_event
from shared.storage import outbox, tables

log = structlog.get_logger()
Json = dict[str, Any]
SOURCE = "phalanx/controller"
BIND_CONCURRENCY = 64
# A gang's members change in bursts (a hundred binds, then a hundred starts); its status is
# written once per burst rather than once per member.
STATUS_COALESCE_SECONDS = 0.05
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
    ) -> None:
        self._cache = cache
        self._kube = kube
        self._sessions = sessions
        self._ours = tuple(scheduler_names)
        self._on_committed = on_committed
        self._locks: dict[tuple[str, str], asyncio.Lock] = defaultdict(asyncio.Lock)
        self._bind_slots = asyncio.Semaphore(BIND_CONCURRENCY)
        self._admitted: set[tuple[str, str]] = set()  # enqueued since the last status write
        self._conditions: dict[tuple[str, str], Json] = {}  # newest condition not yet written
        self._fences = DecisionFences(sessions)
        self._evictor = Evictor(kube)
        self._leader = LeaderCheck(sessions)
        # The audit rows of decisions carried out together share one transaction.
        self._audits = Batcher(self._write_audits)
        self._status_writes = Coalescer(
            STATUS_COALESCE_SECONDS, self._write_status, what="PodGroup status write"
        )

    # -- decisions ---------------------------------------------------------------------------------

    async def decided(self, event: CloudEvent[Any]) -> None:
        data = event.data
        # The lease row first: a forged epoch must not reach the fences, where it would make
        # every later decision of the real leader look stale.
        refusal = await self._leader.refusal(data.epoch, data.valid_until)
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
                await self._place(data)
            case msg.GangEnqueued():
                self._status_soon(data.namespace, data.podgroup, admitted=True)
            case msg.GangUnschedulable():
                self._status_soon(
                    data.namespace,
                    data.podgroup,
                    condition=_condition("Unschedulable", data.condition_reason, data.message),
                )
                if data.condition_reason not in GANG_NOT_VALID:
                    self._failed_scheduling(data)
            case msg.PodsEvicted():
                await self._evict(data)

    async def _place(self, data: msg.GangPlaced) -> None:
        async def bind(index: int, b: msg.Bind) -> str:
            if index:  # a fault test holds back all but the gang's first bind here
                await failpoints.hit("ctl.mid_bind_batch")
            async with self._bind_slots:
                # The wait for a slot may outlast the decision: past its valid_until the scheduler
                # no longer counts it, so a late bind could book a node twice.
                if self._leader.expired(data.valid_until):
                    return "expired"
                return await self._kube.bind(b.namespace, b.name, b.node, b.uid)

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
        self._status_soon(
            data.namespace,
            data.podgroup,
            condition=_condition("Scheduled", "tasks in gang are ready to be scheduled", ""),
        )
        await self._audit(
            "bound",
            data,
            outcome="done" if not refused else "failed",
            details={"pods": {b.name: b.node for b in bound}, "refused": refused},
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

        async def warn(eviction: msg.Eviction, reason: str, message: str) -> None:
            pod = pods[(eviction.namespace, eviction.name)]
            if pod is not None:
                await self._kube.record_event(
                    pod, type_="Warning", reason=reason, message=message, component=SCHEDULER_COMPONENT
                )

        async def evicted(eviction: msg.Eviction) -> None:
            pod = pods[(eviction.namespace, eviction.name)]
            if pod is None:
                return
            for involved, type_, reason, message in victim_events(
                pod, podgroup, reason=eviction.reason, node=eviction.node, preemptor=preemptor_name
            ):
                await self._kube.record_event(
                    involved, type_=type_, reason=reason, message=message, component=SCHEDULER_COMPONENT
                )

        async def refused(eviction: msg.Eviction, why: str) -> None:
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
        event = new_event(audit, source=SOURCE, event_id=event_id)
        subject = subjects.audit("controller", action, data.namespace, data.podgroup)
        await self._audits.submit((subject, event))

    async def _write_audits(self, events: list[tuple[str, CloudEvent[Any]]]) -> list[None]:
        async with self._sessions() as session, session.begin():
            outbox.enqueue_many(session, tables.ControllerOutbox, events)
        self._on_committed()
        return [None] * len(events)

    # -- PodGroup status ---------------------------------------------------------------------------

    async def group_changed(self, namespace: str, podgroup: str) -> None:
        """A member pod or the PodGroup changed: bring phase and counters up to date shortly.

        The update reads the cache when it runs, so one update covers every change before it. If
        the controller stops first, the periodic resync brings the status up to date.
        """
        self._status_soon(namespace, podgroup)

    def _status_soon(
        self, namespace: str, podgroup: str, *, admitted: bool = False, condition: Json | None = None
    ) -> None:
        """Write the PodGroup's status once for a burst of changes and decisions: an admission
        and the newest condition are kept until the write. Lost in a crash, they come back: the
        scheduler decides again for a gang whose decision is never confirmed."""
        key = (namespace, podgroup)
        if admitted:
            self._admitted.add(key)
        if condition is not None:
            self._conditions[key] = condition
        self._status_writes.request(key)

    async def _write_status(self, key: tuple[str, str]) -> None:
        admitted = key in self._admitted
        self._admitted.discard(key)
        await self._update_status(*key, admitted=admitted, condition=self._conditions.pop(key, None))

    async def _update_status(
        self, namespace: str, name: str, *, admitted: bool = False, condition: Json | None = None
    ) -> None:
        async with self._locks[(namespace, name)]:
            podgroup = self._cache.get("PodGroup", (namespace, name))
            if podgroup is None:
                return
            # A fresh Unschedulable verdict is this session's condition: with members running, the
            # gang goes Unknown (Volcano's getPodGroupPhase), which is its Job's Unknown event.
            status = podgroup_status(
                podgroup,
                self._cache.pods_in_group(namespace, name),
                admitted=admitted,
                unschedulable_now=condition is not None and condition.get("type") == "Unschedulable",
            )
            if condition is not None:
                status["conditions"] = _with_condition(status.get("conditions") or [], condition)
            if _same_status(podgroup.get("status") or {}, status):
                return
            # PodGroup has no status subresource (as in Volcano): the status is set on the object itself.
            await self._kube.set_status("PodGroup", namespace, name, status, subresource="")

    # -- plain pods ----------------------------------------------------------------------------------

    async def pod_added(self, pod: Json) -> None:
        """Give a plain pod that asks for our scheduler a PodGroup, as Volcano's pg-controller does."""
        if not needs_podgroup(pod, self._ours):
            return
        podgroup = podgroup_for_pod(pod, await self._owner_annotations(pod), self._ours)
        if podgroup is None:
            return
        await self._kube.create(podgroup)
        meta = pod["metadata"]
        await self._kube.patch(
            "Pod", meta.get("namespace"), meta["name"], group_annotation_patch(podgroup["metadata"]["name"])
        )

    async def _owner_annotations(self, pod: Json) -> dict[str, str]:
        """The annotations of the pod's ReplicaSet or StatefulSet (group-min-member and the
        `volcano.sh/` ones), from the cache or, when its event has not arrived yet, the API."""
        owner = controller_of(pod)
        kind = str((owner or {}).get("kind", ""))
        if owner is None or kind not in WORKLOAD_KINDS:
            return {}
        namespace = (pod.get("metadata") or {}).get("namespace")
        workload = self._cache.by_uid(kind, str(owner.get("uid"))) or await self._kube.get(
            kind, namespace, str(owner.get("name"))
        )
        return dict(((workload or {}).get("metadata") or {}).get("annotations") or {})

    async def workload_changed(self, workload: Json) -> None:
        """Volcano's workload support: a ReplicaSet or StatefulSet scaled to zero loses its pods'
        PodGroup; a changed group-min-member (or inherited annotation) resizes it."""
        meta = workload.get("metadata") or {}
        namespace, uid = str(meta.get("namespace") or ""), str(meta.get("uid", ""))
        name = f"{PODGROUP_PREFIX}{uid}"
        existing = self._cache.get("PodGroup", (namespace, name))
        first = next(
            (
                p
                for p in self._cache.all("Pod")
                if controller_uid(p) == uid and p["metadata"].get("namespace") == namespace
            ),
            None,
        )
        if first is not None:  # its group annotation is ours: judge it as when it was created
            annotations = {
                k: v for k, v in (first["metadata"].get("annotations") or {}).items() if k != GROUP_ANNOTATION
            }
            first = {**first, "metadata": {**first["metadata"], "annotations": annotations}}
        action, podgroup = workload_podgroup(workload, first, existing, self._ours)
        if action == "delete" and existing is not None:
            await self._kube.delete("PodGroup", namespace, name)
        elif action == "update" and podgroup is not None:
            await self._kube.replace(podgroup)


def _waits_for_node(pod: Json) -> bool:
    return not (pod.get("spec") or {}).get("nodeName") and not (pod.get("metadata") or {}).get(
        "deletionTimestamp"
    )


def _pod_ref(namespace: str, name: str, uid: str) -> Json:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": namespace, "name": name, "uid": uid}}


def _condition(kind: str, reason: str, message: str) -> Json:
    return {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": message,
        "transitionID": str(uuid.uuid4()),
        "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def _with_condition(conditions: list[Json], condition: Json) -> list[Json]:
    """Volcano keeps one condition per type; Scheduled and Unschedulable replace each other."""
    opposite = {"Scheduled": "Unschedulable", "Unschedulable": "Scheduled"}.get(condition["type"])
    kept = [c for c in conditions if c.get("type") not in (condition["type"], opposite)]
    same = next((c for c in conditions if c.get("type") == condition["type"]), None)
    if same and same.get("message") == condition["message"] and same.get("reason") == condition["reason"]:
        condition = same  # unchanged: keep its time, so the status does not churn
    return [*kept, condition]


# The status fields users see, each with what its absence reads as.
_SHOWN_STATUS: dict[str, Any] = {"phase": "", "running": 0, "succeeded": 0, "failed": 0, "conditions": []}


def _same_status(held: Json, wanted: Json) -> bool:
    """Whether writing `wanted` would change what users see; absent counters and conditions read
    as zero and none, so a new PodGroup is not rewritten only to spell out its zeros."""
    return all(
        (held.get(f) or empty) == (wanted.get(f) or empty)
        for f, empty in _SHOWN_STATUS.items()
        if f in wanted
    )


def _ident_of(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace')}/{meta.get('name')}"
