"""Shell: keep each PodGroup's status — phase, counters and the scheduler's newest condition.

Sits behind the gang keeper (gangs.py): a member pod or the PodGroup changed, or a decision came
(an admission, a Scheduled or Unschedulable condition), and the keeper asks for a write `soon`.
Writes are coalesced per PodGroup, so a burst of changes (a hundred binds, then a hundred starts)
writes the status once; the write reads the cache when it runs, computes the status with the pure
`podgroup_status` (core/podgroups.py), and is skipped when users would see no change. A sharded
replica writes only the PodGroups of its shards (`acts_for_group`, set by app.py).

A gang of pods that all exist already (a plain pod's) is usually admitted and placed in the same
cycle: its admission waits up to `ADMITTED_HOLD_SECONDS` for the placement, or for the
scheduler's verdict that it does not fit (written at once, Inqueue with the Unschedulable
condition). No write happens while a placement's binds are under way (`placing`), and after them
the write waits for the pods it bound to start, up to `STARTING_HOLD_SECONDS` once the watch has
shown their binds (the kubelet's Running follows the bind in the same stream, so the wait does
not grow with the controller's lag). So a plain pod's PodGroup goes Pending → Running with
`running` counted and the Scheduled condition in one write on the happy path, where writing at
once wrote Running with nothing running, then the count (issue #15). A pod slow to start (an
image pull) has its gang written Running with the count still to come when the wait ends, as
Volcano shows it. A gang whose pods are yet to be created (a Job's) is written Inqueue at once:
its Job's pods are created on that phase, and the write confirms the admission to the scheduler,
which otherwise enqueues the gang again after its decision TTL and fences off a placement begun
before a controller restart (tests/e2e/test_failpoints.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from services.controller.cache import Cache, version_of
from services.controller.coalesce import Coalescer
from services.controller.core.podgroups import podgroup_status
from services.controller.kube_writes import KubeWrites
from shared.volcano.objects import PodObject

Json = dict[str, Any]
# A gang's members change in bursts (a hundred binds, then a hundred starts); its status is
# written once per burst rather than once per member.
STATUS_COALESCE_SECONDS = 0.05
# How long the admission of a gang whose pods all exist waits for what follows it in the same
# cycle: the placement, or the scheduler's verdict that the gang does not fit now (written at
# once). Well under the scheduler's decision TTL: the Inqueue write confirms the admission.
ADMITTED_HOLD_SECONDS = 5.0
# How long a placed gang's status waits for the pods it bound to start, once the watch has shown
# all of their binds: the kubelet's Running follows the bind in the same stream, so on the happy
# path the wait ends with the last start and `running` is written with the phase. A pod slow to
# start (an image pull) has its gang written Running, with the count to come, after this long.
STARTING_HOLD_SECONDS = 5.0
# How long it waits for the binds to show in the watch at all (the controller's own lag).
BINDS_SEEN_HOLD_SECONDS = 25.0


@dataclass
class _Starting:
    """A placed gang whose status waits for the pods it bound (uids) to start."""

    placed_at: float
    uids: set[str]
    unseen: set[str] = field(default_factory=set)  # bound by us, the bind not in the cache yet
    seen_at: float = 0.0  # when the watch showed the last of the binds

    def deadline(self) -> float:
        if self.unseen:
            return self.placed_at + BINDS_SEEN_HOLD_SECONDS
        return self.seen_at + STARTING_HOLD_SECONDS


# How soon, and how many times in a row, a status write not made for a reason that may pass (a
# lapsed shard lease, a timeout, a server error) is tried again.
RETRY_SECONDS = 1.0
RETRIES = 30
# Our last writes kept until the cache has them: the newest this many (beyond, the cache's copy).
WRITTEN_KEPT = 4096


class PodGroupStatusWrites:
    def __init__(self, cache: Cache, kube: KubeWrites) -> None:
        self._cache = cache
        self._kube = kube
        self._locks: dict[tuple[str, str], asyncio.Lock] = defaultdict(asyncio.Lock)
        self._admitted: set[tuple[str, str]] = set()  # enqueued since the last status write
        self._conditions: dict[tuple[str, str], Json] = {}  # newest condition not yet written
        self._bound: dict[tuple[str, str], dict[str, str]] = {}  # pod uid → node, bound by us
        self._written: dict[tuple[str, str], Json] = {}  # our last write, until the cache has it
        self._placing: Counter[tuple[str, str]] = Counter()  # placements whose binds are under way
        self._retries: Counter[tuple[str, str]] = Counter()  # writes not made in a row
        self._admission_held: dict[tuple[str, str], float] = {}  # admitted, unwritten: until when
        self._starting: dict[tuple[str, str], _Starting] = {}  # placed, its pods not started yet
        self._writes = Coalescer(STATUS_COALESCE_SECONDS, self._write, what="PodGroup status write")
        # A sharded replica writes the status only of its shards' PodGroups (shard_leases.py).
        self.acts_for_group: Callable[[Json], bool] = lambda podgroup: True

    def soon(
        self,
        namespace: str,
        podgroup: str,
        *,
        admitted: bool = False,
        condition: Json | None = None,
        bound: Mapping[str, str] | None = None,
    ) -> None:
        """Write the PodGroup's status once for a burst of changes and decisions: an admission,
        the newest condition and the pods just bound (uid → node) are kept until the write. Lost
        in a crash, they come back: the scheduler decides again for a gang whose decision is
        never confirmed."""
        key = (namespace, podgroup)
        now = asyncio.get_running_loop().time()
        if admitted:
            self._admitted.add(key)
        if condition is not None:
            self._conditions[key] = condition
        if bound:
            self._bound.setdefault(key, {}).update(bound)
            self._admission_held.pop(key, None)  # placed: the hold has what it waited for
            starting = self._starting.setdefault(key, _Starting(now, set()))
            starting.uids.update(bound)
            starting.unseen.update(bound)
        elif admitted and condition is None and key not in self._starting and self._members_all_made(key):
            self._admission_held.setdefault(key, now + ADMITTED_HOLD_SECONDS)
        self._writes.request(key, delay=self._wait(key, now))

    def _members_all_made(self, key: tuple[str, str]) -> bool:
        podgroup = self._cache.get("PodGroup", key)
        min_member = int(((podgroup or {}).get("spec") or {}).get("minMember") or 0)
        return podgroup is not None and min_member > 0 and len(self._cache.pods_in_group(*key)) >= min_member

    def _wait(self, key: tuple[str, str], now: float) -> float | None:
        """Seconds the gang's status write waits (None: the usual coalescing): while its placed
        pods start, and while its admission waits for the placement with no verdict to write."""
        starting = self._starting.get(key)
        if starting is not None:
            pods = {pod.uid: pod for pod in map(PodObject, self._cache.pods_in_group(*key))}
            seen = {u for u in starting.unseen if u not in pods or pods[u].node_name}
            if seen:  # their binds are in; their starts follow in the stream
                starting.unseen -= seen
                starting.seen_at = now
            starting.uids = {u for u in starting.uids if u in pods and _not_started(pods[u])}
            if starting.uids and now < starting.deadline():
                return starting.deadline() - now
            del self._starting[key]
            return None
        held = self._admission_held.get(key)
        if held is not None and key not in self._conditions and now < held:
            return held - now
        self._admission_held.pop(key, None)
        return None

    @contextlib.contextmanager
    def placing(self, namespace: str, podgroup: str) -> Iterator[None]:
        """While a placement's binds are under way, the gang's status waits for them: the write
        that follows counts them, instead of an Inqueue write now and a Running one after."""
        key = (namespace, podgroup)
        self._placing[key] += 1
        try:
            yield
        finally:
            self._placing[key] -= 1
            if not self._placing[key]:
                del self._placing[key]

    async def _write(self, key: tuple[str, str]) -> None:
        if key in self._placing:
            return  # the placement asks for the write when its binds are done
        if (wait := self._wait(key, asyncio.get_running_loop().time())) is not None:
            self._writes.request(key, delay=wait)  # a pod event may end the wait sooner
            return
        admitted = key in self._admitted
        self._admitted.discard(key)
        condition = self._conditions.pop(key, None)
        namespace, name = key
        async with self._locks[key]:
            podgroup = self._newest(key)
            if podgroup is None:
                self._retries.pop(key, None)
                return
            if not self.acts_for_group(podgroup):
                # Not ours now: moved to another replica, or our lease lapsed a moment on a
                # starved machine (shard_leases.py), in which case it is ours again soon.
                self._not_written(key, admitted, condition, None)
                return
            pods = self._cache.pods_in_group(namespace, name)
            if bound := self._still_binding(key, pods):
                # Bound by us, their watch events not here yet: they count as bound already, or
                # a write in between would take the gang back to Pending.
                pods = [_bound_to(pod, bound) for pod in pods]
            # A fresh Unschedulable verdict is this session's condition: with members running, the
            # gang goes Unknown (Volcano's getPodGroupPhase), which is its Job's Unknown event.
            status = podgroup_status(
                podgroup,
                pods,
                admitted=admitted,
                unschedulable_now=condition is not None and condition.get("type") == "Unschedulable",
            )
            if condition is not None:
                status["conditions"] = _with_condition(status.get("conditions") or [], condition)
            self._retries.pop(key, None)
            if _same_status(podgroup.get("status") or {}, status):
                return
            try:
                # PodGroup has no status subresource (as in Volcano): set on the object itself.
                written = await self._kube.set_status("PodGroup", namespace, name, status, subresource="")
            except Exception as error:
                self._not_written(key, admitted, condition, error)
                raise
            if written is not None:
                self._written.pop(key, None)
                self._written[key] = written  # newest last; the oldest go past the bound
                while len(self._written) > WRITTEN_KEPT:
                    del self._written[next(iter(self._written))]

    def _not_written(
        self, key: tuple[str, str], admitted: bool, condition: Json | None, error: Exception | None
    ) -> None:
        """A write not made keeps what only it carried (the admission, the placement's Scheduled
        condition) for the next one, and one that may pass (a lapsed lease, a timeout, a server
        error, too many requests) is tried again soon, a few times: a placed pod's gang may see
        no other change for hours, and would keep a stale status without its condition. Under
        load this lost the Scheduled condition of about 2 to 5% of the PodGroups."""
        if admitted:
            self._admitted.add(key)
        if condition is not None:
            self._conditions.setdefault(key, condition)  # a newer one since wins
        status = getattr(error, "status", None)
        if isinstance(status, int) and status < 500 and status != 429:
            return  # refused as it is: the next change or the periodic resync tries again
        self._retries[key] += 1
        if self._retries[key] <= RETRIES:
            self._writes.request(key, delay=RETRY_SECONDS)

    def _newest(self, key: tuple[str, str]) -> Json | None:
        """The PodGroup as the cache holds it, or as our last write returned it while the cache
        has not seen that write yet (the status is replaced whole: a write from an older copy
        would drop what the last one wrote)."""
        held = self._cache.get("PodGroup", key)
        written = self._written.get(key)
        if written is None or held is None or version_of(held) >= version_of(written):
            self._written.pop(key, None)
            return held
        return written

    def _still_binding(self, key: tuple[str, str], pods: list[Json]) -> dict[str, str]:
        """Pods we bound (uid → node) that the cache does not show bound yet; forgotten once it does."""
        bound = self._bound.get(key)
        if not bound:
            return {}
        waiting = {str(pod.uid) for pod in map(PodObject, pods) if not pod.node_name}
        kept = {uid: node for uid, node in bound.items() if uid in waiting}
        if kept:
            self._bound[key] = kept
        else:
            self._bound.pop(key, None)
        return kept


def _not_started(pod: PodObject) -> bool:
    return (pod.phase or "Pending") == "Pending" and not pod.deleting


def _bound_to(pod: Json, bound: Mapping[str, str]) -> Json:
    spec = pod.get("spec") or {}
    node = bound.get(str(PodObject(pod).uid))
    if node is None or spec.get("nodeName"):
        return pod
    return {**pod, "spec": {**spec, "nodeName": node}}


def new_condition(kind: str, reason: str, message: str) -> Json:
    """A PodGroup condition as Volcano writes it, new as of now."""
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
