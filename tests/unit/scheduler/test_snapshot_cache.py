"""The snapshot kept between cycles equals the snapshot built whole, after any changes.

`snapshot_cache.SnapshotCache` rebuilds only the gangs touched by a changed row, decision,
nomination or below-minimum mark; `snapshot_reader.build_snapshot` builds everything from the
rows. After every step of any sequence of row changes the two must agree, settled sums included
(foreign pods in any order: they are booked per node, their order means nothing).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.scheduler.core import snapshot as core
from services.scheduler.mirror import ClusterMirror
from services.scheduler.snapshot_reader import ShellMemory, build_snapshot
from tests.unit.scheduler.builders import NOW

pytestmark = pytest.mark.unit

PODS = [f"p{i}" for i in range(10)]
# "podgroup-p0": a plain pod's own PodGroup, whose pod may not name it yet (Snapshot.unjoined).
GROUPS = ["g0", "g1", "podgroup-p0"]
NODES = ["n0", "n1", "n2"]


class Cluster:
    """The rows, as the mirror holds them, and what the last step changed."""

    def __init__(self) -> None:
        self.mirror = ClusterMirror()
        self.mirror.full_read = False
        self.version = 0
        self.decisions: list[Any] = []
        self.touched: dict[str, set[str]] = {}

    def put(self, attribute: str, key: str, row: Any | None) -> None:
        held: dict[str, Any] = getattr(self.mirror, attribute)
        if row is None:
            held.pop(key, None)
        else:
            held[key] = row
        self.touched.setdefault(attribute, set()).add(key)

    def next_version(self) -> int:
        self.version += 1
        return self.version

    def caught_up(self) -> None:
        self.mirror.changed, self.touched = self.touched, {}
        self.mirror.changed_rows = sum(len(keys) for keys in self.mirror.changed.values())


@st.composite
def pod(draw: st.DrawFn, uid: str, version: int) -> Any:
    node = draw(st.sampled_from([None, *NODES]))
    phase = draw(st.sampled_from(["Pending", "Running", "Succeeded", "Releasing"]))
    return SimpleNamespace(
        uid=uid,
        namespace="ns",
        name=draw(st.sampled_from([uid, "same-name"])),
        group_name=draw(st.sampled_from([None, *GROUPS])),
        task_role=draw(st.sampled_from([None, "worker"])),
        ours=draw(st.booleans()) or True,
        request={"cpu": draw(st.sampled_from([100, 500])), "pods": 1000},
        node_name=node,
        phase=phase,
        priority=0,
        priority_class=None,
        placement=draw(st.sampled_from([None, {"labels": {"app": "x"}}])),
        resource_version=version,
    )


@st.composite
def group(draw: st.DrawFn, uid: str, version: int) -> Any:
    return SimpleNamespace(
        uid=f"uid-{uid}",
        namespace="ns",
        name=uid,
        queue=draw(st.sampled_from(["default", "q1", "missing"])),
        min_member=draw(st.integers(1, 3)),
        min_task_member=None,
        min_resources=draw(st.sampled_from([None, {"cpu": 200}])),
        priority_class=draw(st.sampled_from([None, "high"])),
        phase=draw(st.sampled_from(["Pending", "Inqueue", "Running"])),
        created_at=NOW - timedelta(seconds=draw(st.integers(0, 3))),
        annotations=None,
        topology=None,
        resource_version=version,
    )


def node(name: str, version: int, ready: bool) -> Any:
    return SimpleNamespace(
        name=name,
        allocatable={"cpu": 4000, "pods": 110_000},
        labels={},
        taints=None,
        unschedulable=False,
        ready=ready,
        resource_version=version,
    )


def queue(name: str, weight: int) -> Any:
    return SimpleNamespace(
        name=name,
        weight=weight,
        capability=None,
        guarantee=None,
        deserved=None,
        reclaimable=True,
        state="Open",
        parent=None,
        priority=0,
        annotations=None,
    )


def decision(kind: str, target: str) -> Any:
    return SimpleNamespace(
        kind=kind,
        gang_uid=f"uid-{target}" if kind == "enqueue" else "",
        pod_uid=target if kind != "enqueue" else None,
        node="n1" if kind == "bind" else None,
        devices=None,
    )


@st.composite
def step(draw: st.DrawFn, cluster: Cluster, memory: ShellMemory) -> None:
    """One change to the cluster, as ingest or the cycle's own records would make it."""
    kind = draw(
        st.sampled_from(
            [
                "pod",
                "pod",
                "pod",
                "gone",
                "group",
                "group-gone",
                "node",
                "queue",
                "priority",
                "decisions",
                "nominations",
                "nothing",
            ]
        )
    )
    version = cluster.next_version()
    if kind == "pod":
        uid = draw(st.sampled_from(PODS))
        cluster.put("pods", uid, draw(pod(uid, version)))
    elif kind == "gone":
        cluster.put("pods", draw(st.sampled_from(PODS)), None)
    elif kind == "group":
        name = draw(st.sampled_from(GROUPS))
        cluster.put("groups", f"uid-{name}", draw(group(name, version)))
    elif kind == "group-gone":
        cluster.put("groups", f"uid-{draw(st.sampled_from(GROUPS))}", None)
    elif kind == "node":
        name = draw(st.sampled_from(NODES))
        cluster.put(
            "nodes", name, None if draw(st.integers(0, 4)) == 0 else node(name, version, draw(st.booleans()))
        )
    elif kind == "queue":
        cluster.put("queues", "q1", None if draw(st.booleans()) else queue("q1", draw(st.integers(1, 3))))
    elif kind == "priority":
        row = SimpleNamespace(name="high", value=draw(st.integers(0, 5)))
        cluster.put("priority_classes", "high", None if draw(st.booleans()) else row)
    elif kind == "decisions":
        targets = st.sampled_from(
            [("bind", p) for p in PODS] + [("evict", p) for p in PODS] + [("enqueue", g) for g in GROUPS]
        )
        cluster.decisions = [decision(k, t) for k, t in draw(st.lists(targets, max_size=5, unique=True))]
    elif kind == "nominations":
        memory.nominations = dict(
            draw(st.lists(st.tuples(st.sampled_from(PODS), st.sampled_from(NODES)), max_size=3))
        )
        memory.below_min_since = {
            f"uid-{g}": NOW for g in draw(st.lists(st.sampled_from(GROUPS), max_size=2))
        }


def whole(cluster: Cluster, memory: ShellMemory) -> core.Snapshot:
    fresh = ShellMemory(nominations=dict(memory.nominations), below_min_since=dict(memory.below_min_since))
    m = cluster.mirror
    return build_snapshot(
        now=NOW,
        queues=m.queues.values(),
        nodes=m.nodes.values(),
        priority_classes=m.priority_classes.values(),
        groups=m.groups.values(),
        pods=m.pods.values(),
        decisions=cluster.decisions,
        memory=fresh,
    )


def same(kept: core.Snapshot, built: core.Snapshot) -> None:
    assert sorted(map(repr, kept.other_pods)) == sorted(map(repr, built.other_pods))
    assert replace(kept, other_pods=()) == replace(built, other_pods=())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_kept_snapshot_equals_a_whole_build_after_any_changes(data: st.DataObject) -> None:
    cluster, memory = Cluster(), ShellMemory()
    cluster.mirror.full_read = True  # the first read of a leader is a full one
    for _ in range(data.draw(st.integers(1, 25))):
        data.draw(step(cluster, memory))
        cluster.caught_up()
        kept = memory.cache.build(cluster.mirror, cluster.decisions, memory, now=NOW)
        cluster.mirror.full_read = False
        same(kept, whole(cluster, memory))


def test_nothing_changed_is_quiet_and_a_change_is_not() -> None:
    cluster, memory = Cluster(), ShellMemory()
    cluster.mirror.full_read = True
    cluster.put("groups", "uid-g0", SimpleNamespace(**vars(group_row())))
    cluster.caught_up()
    memory.cache.build(cluster.mirror, [], memory, now=NOW)
    cluster.mirror.full_read = False
    assert not memory.cache.quiet  # a first build has nothing to compare with
    cluster.caught_up()
    memory.cache.build(cluster.mirror, [], memory, now=NOW)
    assert memory.cache.quiet
    memory.cache.build(cluster.mirror, [decision("enqueue", "g0")], memory, now=NOW)
    assert not memory.cache.quiet  # a pending decision came
    built = memory.cache.build(cluster.mirror, [decision("enqueue", "g0")], memory, now=NOW)
    assert memory.cache.quiet
    assert built.gangs[0].phase == "Inqueue"


def group_row() -> Any:
    return SimpleNamespace(
        uid="uid-g0",
        namespace="ns",
        name="g0",
        queue="default",
        min_member=1,
        min_task_member=None,
        min_resources=None,
        priority_class=None,
        phase="Pending",
        created_at=NOW,
        annotations=None,
        topology=None,
        resource_version=1,
    )
