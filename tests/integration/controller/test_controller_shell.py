"""The controller's shell through its composition root (`services.controller.app.build`), on real
NATS JetStream, PostgreSQL and the simulator: a Job's `cluster.job.*` event in, its PodGroup
created in the API and its phase announced on `jobs.*` through the outbox; its PodGroup's event
once admitted (Inqueue) in, its pods created. Neither watcher nor scheduler runs: the test
publishes what the watcher would, and admits the gang as the scheduler would."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client
from sqlalchemy.ext.asyncio import AsyncEngine

from services.controller.app import Controller, build
from services.controller.settings import ControllerSettings
from shared.bus.nats import NatsBus
from shared.bus.ports import ConsumerSpec
from shared.clock import SystemClock
from shared.config import NatsSettings
from shared.kube.client import make_api_client, request
from shared.messages import subjects
from shared.messages.cluster import ObjectChanged
from shared.messages.envelope import CloudEvent, new_event
from tests.integration.running import running
from tests.simulator_thread import RunningSimulator
from tests.unit.controller.manifests import job, task
from tests.waiting import until

pytestmark = pytest.mark.integration
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"
PODGROUPS = "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups"
PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
async def controller(
    nats_url: str, migrated_engine: AsyncEngine, simulator: RunningSimulator
) -> AsyncIterator[Controller]:
    """The controller as `run` makes it, on the test's servers; its own API client and bus."""
    bus = await NatsBus.connect(NatsSettings(url=nats_url), name="phalanx-controller")
    api = await make_api_client(str(simulator.kubeconfig_path))
    settings = ControllerSettings(shards=1, resync_seconds=3600)
    built = build(settings, bus=bus, store=migrated_engine, kube=api, clock=SystemClock())
    try:
        async with running(built):
            yield built
    finally:
        await api.close()


def changed(obj: dict[str, Any], change: str = "ADDED") -> CloudEvent[ObjectChanged]:
    """The event the watcher publishes for `obj` (services/watcher/translate.py)."""
    meta = obj["metadata"]
    data = ObjectChanged(
        kind=obj["kind"],
        namespace=meta.get("namespace"),
        name=meta["name"],
        uid=meta["uid"],
        resource_version=int(meta["resourceVersion"]),
        change=change,  # type: ignore[arg-type]
        object=obj,
    )
    return new_event(
        data, source="phalanx/watcher", event_id=f"{meta['uid']}:{meta['resourceVersion']}:{change}"
    )


async def names(api: client.ApiClient, path: str, job: str) -> list[str]:
    listed = await request(api, "GET", path)
    return sorted(
        item["metadata"]["name"]
        for item in listed.get("items") or []
        if item["metadata"]["name"].startswith(job)
    )


async def test_a_job_event_creates_its_podgroup_and_pods_and_announces_its_phase(
    controller: Controller, api: client.ApiClient, nats_url: str
) -> None:
    phases: list[tuple[str, str]] = []

    async def phase_changed(event: CloudEvent[Any]) -> None:
        phases.append((event.data.name, event.data.phase))

    reader = await NatsBus.connect(NatsSettings(url=nats_url), name="test")
    try:
        reader.consume(ConsumerSpec(subjects.JOBS_STREAM, "test-phases", ["jobs.phase.>"]), phase_changed)
        manifest = job(task("worker", 2), queue="default") | {
            "metadata": {"name": "shell", "namespace": "default"}
        }
        created = await request(api, "POST", JOBS, body=manifest)
        await controller.bus.publish(subjects.cluster_object("Job", "default", "shell"), changed(created))

        podgroups = await until(lambda: names(api, PODGROUPS, "shell"), "the job's PodGroup created")
        assert len(podgroups) == 1
        # The phase record went through the outbox: its relay published it after the commit.
        await until(lambda: ("shell", "Pending") in phases, "the Pending phase on jobs.phase.*")

        # The scheduler admits the gang (its PodGroup Inqueue): the controller creates the pods.
        status = {"status": {"phase": "Inqueue"}}
        podgroup = await request(
            api,
            "PATCH",
            f"{PODGROUPS}/{podgroups[0]}",
            body=status,
            content_type="application/merge-patch+json",
        )
        await controller.bus.publish(
            subjects.cluster_object("PodGroup", "default", podgroups[0]), changed(podgroup, "MODIFIED")
        )
        pods = await until(lambda: names(api, PODS, "shell"), "the job's pods created")
        assert pods == ["shell-worker-0", "shell-worker-1"]
    finally:
        await reader.close()
