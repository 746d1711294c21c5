"""Shell: the cycle's snapshot kept between cycles and rebuilt only where something changed.

The snapshot reader (snapshot_reader.py) brings the mirror of the rows up to date (mirror.py),
which says which keys its catch-up read, then asks this cache for the snapshot. The cache keeps
every gang's `GangInfo`, every task and every foreign pod from the last cycle, and rebuilds only
the gangs touched since: a PodGroup row changed, one of its pods' rows changed, a pending decision
about it or its pods came or went, or its nomination or below-minimum mark changed. The settled
gangs' footprints are kept as running sums as gangs are rebuilt (core/settled.py), so the core
walks only the gangs with work. A new leader, or a cycle that failed, reads the mirror whole
and the cache starts over; `snapshot_reader.build_snapshot`, the whole build, is what the cache
must equal after any sequence of changes (tests/unit/scheduler/test_snapshot_cache.py).

Claims are the exception: pods with volume or DRA claims are resolved again every cycle, as a
claim binds without its pod changing (snapshot_parts.Claims); they are few.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from services.scheduler import snapshot_parts as parts
from services.scheduler.core import snapshot as core
from services.scheduler.core.settled import SettledBook, footprint
from services.scheduler.device_snapshot import DeviceSnapshot
from services.scheduler.mirror import ClusterMirror

GangKey = tuple[str, str]  # (namespace, PodGroup name)


class SnapshotCache:
    def __init__(self) -> None:
        self._start_over()

    def _start_over(self) -> None:
        self.quiet = False  # the last build found nothing changed since the one before
        self._primed = False
        self._tasks: dict[str, core.TaskInfo] = {}  # member pod uid -> its task as last built
        self._pod_gang: dict[str, GangKey] = {}
        self._gang_pods: dict[GangKey, set[str]] = {}
        self._claim_pods: set[str] = set()  # member pods resolved every cycle
        self._others: dict[str, core.OtherPod] = {}
        self._group_key: dict[str, GangKey] = {}
        self._key_groups: dict[GangKey, set[str]] = {}
        self._gangs: dict[str, core.GangInfo] = {}
        self._taskless: set[str] = set()  # gangs with no task yet (parts.unjoined looks at these)
        self._book = SettledBook()
        self._decided = parts.Decided({}, set(), set())
        self._nominations: dict[str, str] = {}
        self._below_min: dict[str, datetime] = {}
        self._priorities: dict[str, int] = {}
        self._queue_names: frozenset[str] = frozenset()
        self._sorted: tuple[core.GangInfo, ...] = ()
        self._nodes: tuple[core.NodeInfo, ...] | None = None
        self._other_pods: tuple[core.OtherPod, ...] | None = None

    def build(
        self, mirror: ClusterMirror, decisions: Iterable[Any], memory: parts.Memory, *, now: datetime
    ) -> core.Snapshot:
        """The snapshot of `mirror` as its last catch-up left it, with `decisions` laid over."""
        decisions = list(decisions)
        changed = mirror.changed
        if mirror.full_read or not self._primed:
            self._start_over()
            pod_uids, group_uids = set(mirror.pods), set(mirror.groups)
        else:
            pod_uids, group_uids = set(changed.get("pods", ())), set(changed.get("groups", ()))
        decided = parts.Decided.of(decisions)
        nominations, below_min = dict(memory.nominations), dict(memory.below_min_since)
        by_decision = _changed(self._decided.binds, decided.binds) | _changed(self._nominations, nominations)
        by_decision |= self._decided.evicting ^ decided.evicting
        gangs_by_decision = (self._decided.enqueued ^ decided.enqueued) | _changed(self._below_min, below_min)
        self.quiet = (
            self._primed
            and not mirror.changed_rows
            and not by_decision
            and not gangs_by_decision
            and not mirror.devices
        )
        pod_uids |= by_decision | self._claim_pods
        group_uids |= gangs_by_decision

        priorities = {p.name: p.value for p in mirror.priority_classes.values()}
        queues = parts.queues_of(mirror.queues.values())
        queue_names = frozenset(q.name for q in queues)
        dra = DeviceSnapshot.of(mirror.devices.values(), decisions, memory)
        claims = parts.Claims(mirror.storage.values(), dra)
        dirty = self._pods_changed(pod_uids, mirror, memory, decided, claims)
        rebuild = self._groups_changed(group_uids, mirror)
        if priorities != self._priorities or queue_names != self._queue_names:
            rebuild |= set(self._group_key)  # every gang's priority or footprint may differ
        rebuild |= {uid for key in dirty for uid in self._key_groups.get(key, ())}
        for uid in rebuild:
            self._rebuild_gang(uid, mirror, priorities, decided, below_min, queue_names)
        if rebuild or not self._primed:
            self._sorted = tuple(sorted(self._gangs.values(), key=parts.gang_order))
        if self._nodes is None or dra is not None or changed.get("nodes") or changed.get("devices"):
            self._nodes = parts.nodes_of(mirror.nodes.values(), memory, dra)
        if self._other_pods is None:
            self._other_pods = tuple(self._others.values())
        self._decided, self._nominations, self._below_min = decided, nominations, below_min
        self._priorities, self._queue_names, self._primed = priorities, queue_names, True
        memory.forget_unseen(len(mirror.pods) + len(mirror.nodes))
        return core.Snapshot(
            nodes=self._nodes,
            queues=queues,
            gangs=self._sorted,
            now=now,
            priority_classes=priorities,
            other_pods=self._other_pods,
            budgets=parts.budgets_of(mirror.budgets.values()),
            devices_taken=frozenset() if dra is None else dra.taken,
            hyper_nodes=parts.hyper_nodes_of(mirror.hyper_nodes.values(), memory),
            settled=self._book.frozen(),
            unjoined=parts.unjoined((self._gangs[uid] for uid in self._taskless), mirror.pods),
        )

    def _pods_changed(
        self,
        uids: set[str],
        mirror: ClusterMirror,
        memory: parts.Memory,
        decided: parts.Decided,
        claims: parts.Claims,
    ) -> set[GangKey]:
        """Rebuild the tasks and foreign pods of `uids`; the gangs they left or joined."""
        dirty: set[GangKey] = set()
        for uid in uids:
            old = self._pod_gang.pop(uid, None)
            if old is not None:
                self._tasks.pop(uid, None)
                _discard(self._gang_pods, old, uid)
                dirty.add(old)
            self._claim_pods.discard(uid)
            pod = mirror.pods.get(uid)
            other = None
            if pod is not None and parts.is_member(pod):
                key = parts.pod_gang(pod)
                self._tasks[uid] = parts.member_task(pod, memory, decided, claims)
                self._pod_gang[uid] = key
                self._gang_pods.setdefault(key, set()).add(uid)
                dirty.add(key)
                if parts.has_claims(pod):
                    self._claim_pods.add(uid)
            elif pod is not None and parts.is_other(pod):
                other = parts.other_pod(pod, memory)
            held = self._others.get(uid)
            if other is not held:
                self._other_pods = None
                if other is None:
                    del self._others[uid]
                else:
                    self._others[uid] = other
        return dirty

    def _groups_changed(self, uids: set[str], mirror: ClusterMirror) -> set[str]:
        for uid in uids:
            old = self._group_key.pop(uid, None)
            if old is not None:
                _discard(self._key_groups, old, uid)
            group = mirror.groups.get(uid)
            if group is not None:
                key = self._group_key[uid] = parts.group_key(group)
                self._key_groups.setdefault(key, set()).add(uid)
        return set(uids)

    def _rebuild_gang(
        self,
        uid: str,
        mirror: ClusterMirror,
        priorities: Mapping[str, int],
        decided: parts.Decided,
        below_min: Mapping[str, datetime],
        queue_names: frozenset[str],
    ) -> None:
        group = mirror.groups.get(uid)
        if group is None:
            self._gangs.pop(uid, None)
            self._taskless.discard(uid)
            self._book.put(uid, None)
            return
        tasks = (self._tasks[p] for p in self._gang_pods.get(parts.group_key(group), ()))
        gang = self._gangs[uid] = parts.gang_info(group, tasks, priorities, decided, below_min)
        if gang.tasks:
            self._taskless.discard(uid)
        else:
            self._taskless.add(uid)
        self._book.put(uid, footprint(gang, queue_names))


def _changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> set[str]:
    """Keys added, removed or given another value."""
    keys = before.keys() ^ after.keys()
    keys.update(k for k, v in after.items() if k in before and before[k] != v)
    return keys


def _discard(index: dict[GangKey, set[str]], key: GangKey, uid: str) -> None:
    held = index.get(key)
    if held is not None:
        held.discard(uid)
        if not held:
            del index[key]
