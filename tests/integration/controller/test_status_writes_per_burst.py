"""A burst of single pods and one-pod Jobs writes each status only as often as users see it change
(issue #15, item 3), on real PostgreSQL and the simulator over HTTP, its kubelets starting a pod
as soon as it is bound.

The controller's reacting half gets the cluster's changes from the simulator's watch, as the
watcher would hand them on, and the scheduler's decisions from the test: each gang admitted, then
placed once its pods exist (a plain pod's in the same cycle, a Job's a cycle later). What is
counted is what the API server served and what a user's `kubectl get -w` shows: a single pod's
PodGroup is written once, Pending → Running with `running` 1 and the Scheduled condition (no
Inqueue, no Running with nothing running first); a Job's twice, Inqueue (its pods are made on
that, and it confirms the admission to the scheduler), then Running the same way; every Job three
times, as Volcano's job controller writes it: Pending when it is created, its pending pod counted
when the pod is made, Running.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from kubernetes_asyncio import client
from sqlalchemy.ext.asyncio import AsyncEngine

from services.controller.cache import controller_uid
from services.controller.dispatch import Dispatcher
from services.simulator.kubelets.nodes import NodeSpec
from shared.kube.client import request, stream_lines
from shared.messages import decisions as msg
from shared.volcano.keys import GROUP_NAME
from tests.integration.controller.conftest import controller, decision
from tests.simulator_thread import RunningSimulator, running_simulator
from tests.unit.controller.manifests import job, task
from tests.waiting import until

pytestmark = pytest.mark.integration
BURST = 6  # of each: single pods and one-pod Jobs
NODES = 2
WATCHED = {
    "Pod": "/api/v1/namespaces/default/pods",
    "PodGroup": "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups",
    "Job": "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs",
}


@pytest.fixture(scope="module")
def simulator() -> Iterator[RunningSimulator]:
    """Kubelets that start a bound pod at once (50 ms), as in the benchmarks."""
    nodes = [NodeSpec(f"node-{i}", cpu="32", memory="64Gi") for i in range(NODES)]
    with running_simulator(nodes=nodes) as sim:
        yield sim


class Watched:
    """Every version of the watched objects the API serves, in order, by (kind, name); each is
    also handed to the controller, as the watcher and the bus would."""

    def __init__(self) -> None:
        self.versions: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)

    def statuses(self, kind: str, name: str) -> list[dict[str, Any]]:
        return [v.get("status") or {} for v in self.versions[(kind, name)]]


@contextlib.asynccontextmanager
async def watching(api: client.ApiClient, dispatcher: Dispatcher) -> AsyncIterator[Watched]:
    watched = Watched()

    async def seen(kind: str, obj: dict[str, Any], *, deleted: bool = False) -> None:
        obj.setdefault("kind", kind)
        watched.versions[(kind, obj["metadata"]["name"])].append(obj)
        await dispatcher.observe(kind, obj, deleted=deleted)

    async def relay(kind: str, path: str, listed: dict[str, Any]) -> None:
        query = [("watch", "true"), ("resourceVersion", listed["metadata"]["resourceVersion"])]
        async for line in stream_lines(api, path, query, timeout=120):
            await seen(kind, line.get("object") or {}, deleted=line.get("type") == "DELETED")

    relays = []
    for kind, path in WATCHED.items():
        listed = await request(api, "GET", path)  # as the watcher starts: a list, then a watch
        for obj in listed.get("items") or []:
            await seen(kind, obj)
        relays.append(asyncio.create_task(relay(kind, path, listed)))
    try:
        yield watched
    finally:
        for task_ in relays:
            task_.cancel()
        await asyncio.gather(*relays, return_exceptions=True)


def one_pod_job(name: str) -> dict[str, Any]:
    manifest = job(task("worker", 1), queue="default")
    return manifest | {"metadata": {"name": name, "namespace": "default"}}


def plain_pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "busybox"}]},
    }


async def test_a_burst_of_single_pods_and_one_pod_jobs_writes_each_status_as_users_see_it_change(
    leading: AsyncEngine, api: client.ApiClient, simulator: RunningSimulator
) -> None:
    dispatcher = controller(leading, api)
    cache = dispatcher.cache
    simulator.call(simulator.cluster.audit.reset)
    async with watching(api, dispatcher) as watched:
        pods = [f"single-{i}" for i in range(BURST)]
        jobs = [f"one-{i}" for i in range(BURST)]
        await asyncio.gather(
            *(request(api, "POST", WATCHED["Pod"], body=plain_pod(name)) for name in pods),
            *(request(api, "POST", WATCHED["Job"], body=one_pod_job(name)) for name in jobs),
        )

        def group_of_pod(name: str) -> str | None:
            pod = cache.get("Pod", ("default", name)) or {}
            return ((pod.get("metadata") or {}).get("annotations") or {}).get(GROUP_NAME)

        def job_group(name: str) -> dict[str, Any] | None:
            uid = (cache.get("Job", ("default", name)) or {}).get("metadata", {}).get("uid")
            return next(
                (g for g in cache.all("PodGroup") if uid and controller_uid(g) == uid),
                None,
            )

        def job_phase(name: str) -> str:
            status = (cache.get("Job", ("default", name)) or {}).get("status") or {}
            return str((status.get("state") or {}).get("phase") or "")

        await until(lambda: all(group_of_pod(p) for p in pods), "every single pod given its PodGroup")
        await until(
            lambda: all(job_group(j) and job_phase(j) for j in jobs), "every Job Pending, with its PodGroup"
        )

        async def place(podgroup: dict[str, Any], pod: dict[str, Any], node: str) -> None:
            bind = msg.PodBinding(
                uid=pod["metadata"]["uid"], namespace="default", name=pod["metadata"]["name"], node=node
            )
            await dispatcher.gangs.decided(decision(msg.GangPlaced, podgroup, binds=(bind,)))

        # The single pods: admitted and placed in one cycle.
        for i, name in enumerate(pods):
            podgroup = cache.get("PodGroup", ("default", group_of_pod(name) or ""))
            assert podgroup is not None
            await dispatcher.gangs.decided(decision(msg.GangEnqueued, podgroup))
            await place(podgroup, cache.get("Pod", ("default", name)) or {}, f"node-{i % NODES}")
        # The Jobs: admitted; their pods are made on the Inqueue; placed in the next cycle.
        job_groups = {name: job_group(name) or {} for name in jobs}
        for podgroup in job_groups.values():
            await dispatcher.gangs.decided(decision(msg.GangEnqueued, podgroup))
        job_pods = {
            name: await until(
                lambda name=name: next(
                    iter(cache.pods_in_group("default", job_groups[name]["metadata"]["name"])), None
                ),
                f"the pod of Job {name} made on its admission",
            )
            for name in jobs
        }
        for i, name in enumerate(jobs):
            await place(job_groups[name], job_pods[name], f"node-{i % NODES}")

        job_group_names = [g["metadata"]["name"] for g in job_groups.values()]
        groups = [group_of_pod(p) or "" for p in pods] + job_group_names

        def shown_running(kind: str, name: str) -> bool:
            statuses = watched.statuses(kind, name)
            if not statuses:
                return False
            last = statuses[-1]
            phase = last.get("phase") if kind == "PodGroup" else (last.get("state") or {}).get("phase")
            return phase == "Running" and last.get("running") == 1

        await until(
            lambda: (
                all(shown_running("PodGroup", g) for g in groups)
                and all(shown_running("Job", j) for j in jobs)
            ),
            "every PodGroup and Job shown Running with its pod running",
            within=30,
        )

    # What a user's `kubectl get podgroup -w` showed of each PodGroup: created Pending, then one
    # write to Running with its pod counted and the Scheduled condition; a Job's Inqueue between.
    for group in groups:
        statuses = watched.statuses("PodGroup", group)
        inqueue = [("Inqueue", 0)] if group in job_group_names else []
        assert [(s.get("phase"), s.get("running", 0)) for s in statuses] == [
            ("Pending", 0),
            *inqueue,
            ("Running", 1),
        ], group
        assert [c["type"] for c in statuses[-1]["conditions"]] == ["Scheduled"]
    # Each Job: Pending when created (its first version has no status yet), its pod counted
    # pending once made, then Running with it running.
    for name in jobs:
        shown = [
            ((s.get("state") or {}).get("phase"), s.get("pending", 0), s.get("running", 0))
            for s in watched.statuses("Job", name)
        ]
        assert shown == [(None, 0, 0), ("Pending", 0, 0), ("Pending", 1, 0), ("Running", 0, 1)], name
    # And the API server's own count of what it served: one status write per single pod's
    # PodGroup, two per Job's, three per Job.
    writes = simulator.call(lambda: simulator.cluster.audit.report(pods=False))["writes"]
    assert writes.get("PATCH podgroups") == BURST + 2 * BURST, writes
    assert writes.get("PATCH jobs/status") == 3 * BURST, writes


async def test_an_admitted_single_pod_that_does_not_fit_shows_inqueue_with_why_in_one_write(
    leading: AsyncEngine, api: client.ApiClient
) -> None:
    """Off the happy path: the admission's hold ends with the scheduler's verdict, so a user sees
    the gang Inqueue with the Unschedulable condition as Volcano shows it, in one write."""
    dispatcher = controller(leading, api)
    cache = dispatcher.cache
    async with watching(api, dispatcher) as watched:
        await request(api, "POST", WATCHED["Pod"], body=plain_pod("too-big"))

        def podgroup() -> dict[str, Any] | None:
            pod = cache.get("Pod", ("default", "too-big")) or {}
            name = ((pod.get("metadata") or {}).get("annotations") or {}).get(GROUP_NAME)
            return cache.get("PodGroup", ("default", name)) if name else None

        group = await until(podgroup, "the pod's PodGroup")
        name = group["metadata"]["name"]
        await dispatcher.gangs.decided(decision(msg.GangEnqueued, group))
        verdict = "0/2 nodes are available: 2 Insufficient cpu."
        await dispatcher.gangs.decided(
            decision(
                msg.GangUnschedulable,
                group,
                reason="NotEnoughResources",
                condition_reason="NotEnoughResources",
                message=verdict,
            )
        )
        await until(
            lambda: len(watched.statuses("PodGroup", name)) > 1, "the PodGroup's status written", within=30
        )
    statuses = watched.statuses("PodGroup", name)
    assert [s.get("phase") for s in statuses] == ["Pending", "Inqueue"]
    assert [(c["type"], c["message"]) for c in statuses[-1]["conditions"]] == [("Unschedulable", verdict)]


async def test_a_status_write_refused_for_a_moment_keeps_the_placements_condition(
    leading: AsyncEngine, api: client.ApiClient
) -> None:
    """On a starved machine the controller's shard lease lapses for a moment and its writes are
    refused: the PodGroup's write is made again once it is ours, with the Scheduled condition."""
    refused: list[str] = []

    def lapsed_once(podgroup: dict[str, Any]) -> bool:
        name = podgroup["metadata"]["name"]
        if name in refused:
            return True
        refused.append(name)  # the first write finds the lease lapsed
        return False

    dispatcher = controller(leading, api, acts_for_group=lapsed_once)
    cache = dispatcher.cache
    async with watching(api, dispatcher) as watched:
        await request(api, "POST", WATCHED["Pod"], body=plain_pod("lapsed"))

        def group() -> dict[str, Any] | None:
            pod = cache.get("Pod", ("default", "lapsed")) or {}
            name = ((pod.get("metadata") or {}).get("annotations") or {}).get(GROUP_NAME)
            return cache.get("PodGroup", ("default", name)) if name else None

        podgroup = await until(group, "the pod's PodGroup")
        pod = cache.get("Pod", ("default", "lapsed")) or {}
        bind = msg.PodBinding(uid=pod["metadata"]["uid"], namespace="default", name="lapsed", node="node-0")
        await dispatcher.gangs.decided(decision(msg.GangEnqueued, podgroup))
        await dispatcher.gangs.decided(decision(msg.GangPlaced, podgroup, binds=(bind,)))
        name = podgroup["metadata"]["name"]
        await until(lambda: len(watched.statuses("PodGroup", name)) > 1, "the PodGroup's status written")
    assert name in refused  # (and the earlier tests' PodGroups, listed again at the start)
    statuses = watched.statuses("PodGroup", name)
    assert [(s.get("phase"), s.get("running", 0)) for s in statuses] == [("Pending", 0), ("Running", 1)]
    assert [c["type"] for c in statuses[-1]["conditions"]] == ["Scheduled"]
