"""Path 3 of the fault plan: no reaction of the controller is lost, on the simulator over HTTP and
a real PostgreSQL.

A plain pod that asks for our scheduler gets a PodGroup of its own. When creating it fails (here
the PodGroup webhook is down, under failurePolicy Fail), the bus redelivers the pod's event; the
controller must then create the PodGroup, not drop the event as one it has already seen. And a pod
deleted while the watch was broken is dropped when the watcher's relist marker says so, not kept
until the controller restarts.
"""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client
from sqlalchemy.ext.asyncio import AsyncEngine

from services.controller.cache import Cache
from services.controller.dispatch import Dispatcher
from services.controller.gangs import GangKeeper
from services.controller.jobs import JobDriver
from services.controller.kube_writes import KubeWrites
from services.controller.queue_keeper import QueueKeeper
from shared.clock import SystemClock
from shared.kube.client import ApiError, request
from shared.storage.engine import make_sessions

pytestmark = pytest.mark.integration
WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"


def dispatcher(engine: AsyncEngine, api: client.ApiClient) -> tuple[Dispatcher, KubeWrites]:
    sessions = make_sessions(engine)
    cache = Cache()
    kube = KubeWrites(api, lambda _: None)
    jobs = JobDriver(cache, kube, sessions, clock=SystemClock(), on_committed=lambda: None)
    gangs = GangKeeper(cache, kube, sessions, scheduler_names=["volcano"], on_committed=lambda: None)
    queues = QueueKeeper(cache, kube, sessions, job_command=jobs.command_issued)
    dispatcher = Dispatcher(cache, jobs=jobs, gangs=gangs, queues=queues)
    return dispatcher, kube


async def plain_pod(api: client.ApiClient, name: str) -> dict:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulerName": "volcano", "containers": [{"name": "c", "image": "busybox"}]},
    }
    return await request(api, "POST", "/api/v1/namespaces/default/pods", body=body)


async def podgroup_webhook_down(api: client.ApiClient) -> None:
    rule = {
        "operations": ["CREATE"],
        "apiGroups": ["scheduling.volcano.sh"],
        "apiVersions": ["v1beta1"],
        "resources": ["podgroups"],
    }
    webhook = {
        "name": "podgroups.down.test",
        "clientConfig": {"url": "https://127.0.0.1:1/validate"},
        "rules": [rule],
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    body = {"metadata": {"name": "down"}, "webhooks": [webhook]}
    await request(api, "POST", WEBHOOKS, body=body)


async def podgroups(api: client.ApiClient) -> list[str]:
    listed = await request(api, "GET", "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups")
    return [item["metadata"]["name"] for item in listed.get("items") or []]


async def test_a_redelivered_event_whose_reaction_failed_is_handled(
    engine: AsyncEngine, api: client.ApiClient
) -> None:
    controller, _ = dispatcher(engine, api)
    pod = await plain_pod(api, "solo")
    await podgroup_webhook_down(api)
    with pytest.raises(ApiError):
        await controller.observe("Pod", dict(pod), deleted=False)
    assert await podgroups(api) == []

    await request(api, "DELETE", f"{WEBHOOKS}/down")
    await controller.observe("Pod", dict(pod), deleted=False)  # the bus redelivers the event
    assert len(await podgroups(api)) == 1, "the pod got its PodGroup on the redelivery"


async def test_a_pod_deleted_during_a_watch_gap_is_dropped_at_the_relist(
    engine: AsyncEngine, api: client.ApiClient
) -> None:
    controller, kube = dispatcher(engine, api)
    pod = await plain_pod(api, "gone-unseen")
    await controller.observe("Pod", dict(pod), deleted=False)
    # Deleted while the watch was broken: no DELETED event ever reaches the controller.
    await request(api, "DELETE", "/api/v1/namespaces/default/pods/gone-unseen")
    assert controller.cache.get("Pod", ("default", "gone-unseen")) is not None

    await controller.relisted("Pod", *await kube.list("Pod"))  # the watcher's relist marker
    assert controller.cache.get("Pod", ("default", "gone-unseen")) is None
