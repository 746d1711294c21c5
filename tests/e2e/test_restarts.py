"""Kill -9 services mid-work; nothing is lost or done twice.

Each service in turn while gangs are being scheduled: a watcher polls the cluster throughout, and a
gang may be seen partly bound for the moment its binds are in flight, but never left so. At the end
every job has Completed, and every pod was placed on exactly one node (the scheduler's decisions and
the pods agree).

The controller while job timers are pending: a policy's delayed action and a ttlSecondsAfterFinished
fire after the restart at their deadlines; a delayed action cancelled before the restart stays
cancelled.
"""

from __future__ import annotations

import asyncio
import json
import signal
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import nats
import pytest
from kubernetes import client, config
from sqlalchemy import select
from sqlalchemy.ext.asyncio import create_async_engine

from phalanx import stack as stacks
from phalanx.scenario import ExternalStack
from phalanx.scenario.kube import Kube
from phalanx.scenario.manifests import command_manifest
from phalanx.scenario.model import ClusterSpec
from shared.bus.permissions import replica_durable
from shared.config import NatsSettings
from shared.messages import subjects
from shared.storage import tables
from tests.waiting import eventually, until

pytestmark = pytest.mark.e2e
GANG = 4
PARTIAL_GRACE_SECONDS = 5.0


def job(name: str, *, replicas: int = GANG, **spec: object) -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "minAvailable": replicas,
            "schedulerName": "volcano",
            **spec,
            "tasks": [
                {
                    "name": "worker",
                    "replicas": replicas,
                    "template": {
                        "metadata": {"annotations": {"simulator.phalanx/run-seconds": "3"}},
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [
                                {
                                    "name": "w",
                                    "image": "busybox",
                                    "resources": {"requests": {"cpu": "2", "memory": "1Gi"}},
                                }
                            ],
                        },
                    },
                }
            ],
        },
    }


class PartialGangWatch(threading.Thread):
    """Polls pods; records any job seen partly bound for longer than the grace period."""

    def __init__(self, core: client.CoreV1Api) -> None:
        super().__init__(daemon=True)
        self.core = core
        self.stop = threading.Event()
        self.since: dict[str, float] = {}
        self.violations: list[str] = []
        self.longest: dict[str, float] = {}  # job -> the longest it was seen partly bound

    def run(self) -> None:
        while not self.stop.is_set():
            bound: dict[str, int] = defaultdict(int)
            for pod in self.core.list_namespaced_pod("default").items:
                name = (pod.metadata.labels or {}).get("volcano.sh/job-name")
                if name and pod.spec.node_name:
                    bound[name] += 1
            now = time.monotonic()
            for name, count in bound.items():
                if 0 < count < GANG:
                    first = self.since.setdefault(name, now)
                    self.longest[name] = max(self.longest.get(name, 0.0), now - first)
                    if now - first > PARTIAL_GRACE_SECONDS:
                        self.violations.append(f"{name}: {count}/{GANG} bound for {now - first:.1f} s")
                else:
                    self.since.pop(name, None)
            time.sleep(0.1)


def test_killing_each_service_loses_nothing_and_binds_nothing_twice(stack: stacks.Stack) -> None:
    ExternalStack(Path(stack.state_dir)).reset(
        ClusterSpec.model_validate(
            {"nodes": [{"namePrefix": "node-", "count": 4, "cpu": "8", "memory": "32Gi"}]}
        ),
        None,
    )
    api = config.new_client_from_config(stack.kubeconfig)
    custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    watch = PartialGangWatch(core)
    watch.start()
    names: list[str] = []
    try:
        for round_, service in enumerate(("scheduler", "controller", "watcher", "admission")):
            for i in range(3):
                name = f"chaos-{round_}-{i}"
                custom.create_namespaced_custom_object(
                    "batch.volcano.sh", "v1alpha1", "default", "jobs", job(name)
                )
                names.append(name)
            time.sleep(0.3)
            stacks.restart(stack, service)

        def every_job_completed() -> bool:
            phases = {
                j["metadata"]["name"]: ((j.get("status") or {}).get("state") or {}).get("phase", "")
                for j in custom.list_namespaced_custom_object(
                    "batch.volcano.sh", "v1alpha1", "default", "jobs"
                )["items"]
            }
            assert {n: phases.get(n) for n in names} == dict.fromkeys(names, "Completed")
            return True

        eventually(every_job_completed, within=120, every=0.5)
    finally:
        watch.stop.set()
        watch.join()
    assert watch.violations == []

    pods = {
        p.metadata.uid: p.spec.node_name
        for p in core.list_namespaced_pod("default").items
        if (p.metadata.labels or {}).get("volcano.sh/job-name", "").startswith("chaos-")
    }
    assert len(pods) == GANG * len(names), "no pod was created twice"
    decided = asyncio.run(_bind_decisions(stack.database_url))
    for uid, node in pods.items():
        assert decided.get(uid) == {node}, f"pod {uid} on {node}, decided {decided.get(uid)}"


async def _bind_decisions(url: str) -> dict[str, set[str]]:
    engine = create_async_engine(url)
    async with engine.connect() as connection:
        rows = (
            await connection.execute(
                select(tables.Decision.pod_uid, tables.Decision.node).where(tables.Decision.kind == "bind")
            )
        ).all()
    await engine.dispose()
    nodes: dict[str, set[str]] = defaultdict(set)
    for uid, node in rows:
        nodes[uid].add(node)
    return nodes


ABORT_AFTER_SECONDS = 10


def test_job_timers_pending_at_a_controller_restart_fire_after_it_and_cancelled_ones_stay_cancelled(
    stack: stacks.Stack,
) -> None:
    ExternalStack(Path(stack.state_dir)).reset(
        ClusterSpec.model_validate({"nodes": [{"name": "node-1", "cpu": "16", "memory": "64Gi"}]}), None
    )
    kube = Kube(Path(stack.kubeconfig), stack.simulator_url)
    delayed_abort = {
        "policies": [{"event": "PodFailed", "action": "AbortJob", "timeout": f"{ABORT_AFTER_SECONDS}s"}]
    }
    for manifest in (
        job("timer-fires", replicas=2, **delayed_abort),
        job("timer-cancelled", replicas=2, **delayed_abort),
        job("ttl-fires", replicas=1, ttlSecondsAfterFinished=ABORT_AFTER_SECONDS),
    ):
        _forever(manifest)
        kube.create(manifest)
    for name in ("timer-fires", "timer-cancelled", "ttl-fires"):
        _wait_for(kube, name, lambda s: _phase(s) == "Running" and s.get("running") == s.get("minAvailable"))

    failed_at = time.time()
    for name in ("timer-fires-worker-0", "timer-cancelled-worker-0"):
        kube.control(f"/simulator/v1/namespaces/default/pods/{name}/fail", {"exitCode": 1})
    kube.control("/simulator/v1/namespaces/default/pods/ttl-fires-worker-0/succeed", {})
    _wait_for(kube, "ttl-fires", lambda s: _phase(s) == "Completed")
    # RestartJob supersedes the pending AbortJob (both act on the whole job), as in Volcano.
    kube.create(
        command_manifest(
            "default", "RestartJob", "batch.volcano.sh/v1alpha1", "Job", _get(kube, "timer-cancelled")
        )
    )
    _wait_for(kube, "timer-cancelled", lambda s: s.get("retryCount") == 1)
    assert time.time() < failed_at + ABORT_AFTER_SECONDS, (
        "the restart must happen while the timers are pending"
    )

    stacks.restart(stack, "controller")

    aborted = _wait_for(kube, "timer-fires", lambda s: _phase(s) == "Aborted")
    aborting_at = next(
        c["lastTransitionTime"] for c in aborted.get("conditions") or [] if c.get("status") == "Aborting"
    )
    # Conditions carry whole seconds: allow the one lost to rounding, never an early firing.
    assert _epoch(aborting_at) >= int(failed_at) + ABORT_AFTER_SECONDS - 1
    _wait_for(kube, "ttl-fires", lambda _: False, gone_ok=True)  # until the TTL has deleted it

    while True:  # looked at once at least, however late a loaded machine got here
        status = _get(kube, "timer-cancelled").get("status") or {}
        assert _phase(status) not in ("Aborting", "Aborted"), status
        if time.time() >= failed_at + ABORT_AFTER_SECONDS + 4:
            break
        time.sleep(0.2)
    assert status.get("retryCount") == 1


def _forever(manifest: dict[str, Any]) -> None:
    """Pods that run until the test ends them."""
    del manifest["spec"]["tasks"][0]["template"]["metadata"]


def _get(kube: Kube, name: str) -> dict[str, Any]:
    return kube.get("Job", "default", name) or {}


def _phase(status: dict[str, Any]) -> str:
    return str((status.get("state") or {}).get("phase", ""))


def _epoch(stamp: str) -> int:
    return int(datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp())


def _wait_for(
    kube: Kube,
    name: str,
    holds: Callable[[dict[str, Any]], bool],
    *,
    gone_ok: bool = False,
    within: float = 60,
) -> dict[str, Any]:
    """The job's status once `holds` is true of it (with `gone_ok`, of {} once the job is gone)."""

    def status_once_it_holds() -> tuple[dict[str, Any]]:
        found = kube.get("Job", "default", name)
        if found is None and gone_ok:
            return ({},)
        status = (found or {}).get("status") or {}
        assert found is not None, f"job {name} is gone"
        assert holds(status), f"job {name}: condition not reached; last status {status}"
        return (status,)  # a tuple: truthy even for an empty status

    (status,) = eventually(status_once_it_holds, within=within, every=0.2)
    return status


PLUGINS = {"plugins": {"env": [], "svc": [], "ssh": []}}
OWNED_KINDS = ("Pod", "Service", "Secret", "ConfigMap", "NetworkPolicy", "PodGroup")


def test_replaying_every_message_to_a_restarted_controller_duplicates_nothing_and_loses_no_transition(
    stack: stacks.Stack,
) -> None:
    ExternalStack(Path(stack.state_dir)).reset(
        ClusterSpec.model_validate({"nodes": [{"name": "node-1", "cpu": "16", "memory": "64Gi"}]}), None
    )
    kube = Kube(Path(stack.kubeconfig), stack.simulator_url)
    restart_on_failure = {"policies": [{"event": "PodFailed", "action": "RestartJob"}]}
    restart_on_eviction = {"policies": [{"event": "PodEvicted", "action": "RestartJob"}]}
    for manifest in (
        job("replay-done", replicas=2, **PLUGINS),
        job("replay-running", replicas=2, **PLUGINS),
        job("replay-restarted", replicas=2, **PLUGINS, **restart_on_failure),
        job("replay-evicted", replicas=2, **restart_on_eviction),
    ):
        _forever(manifest)
        kube.create(manifest)
    for name in ("replay-done", "replay-running", "replay-restarted", "replay-evicted"):
        _wait_for(kube, name, lambda s: _phase(s) == "Running" and s.get("running") == 2)
    for index in (0, 1):
        kube.control(f"/simulator/v1/namespaces/default/pods/replay-done-worker-{index}/succeed", {})
    _wait_for(kube, "replay-done", lambda s: _phase(s) == "Completed")
    # A finished job's PodGroup and plugin objects go (Volcano's killJob); a replay must not bring
    # them back.
    _until(
        lambda: (
            not any(name.startswith("replay-done") for kind, name in _owned_objects(kube) if kind != "Pod")
        )
    )
    before = _owned_objects(kube)

    # Mid-job: the controller dies, a pod fails and another is deleted while it is away, and every
    # durable consumer of the controller is removed, so the restarted controller is handed every
    # message again.
    # Every replica on a scaled stack: the one holding a job's shard is the one replayed to.
    controllers = stack.replicas("controller")
    consumers = _controller_consumers(controllers)
    stacks.stop_processes(controllers, sig=signal.SIGKILL)
    kube.control("/simulator/v1/namespaces/default/pods/replay-restarted-worker-0/fail", {"exitCode": 1})
    kube.delete("Pod", "default", "replay-evicted-worker-1", grace_seconds=0)
    replayed = asyncio.run(_forget_controller_consumers(stack.nats_url, consumers))
    assert replayed > 0
    replay_started = time.time()
    phases = PhaseWatch(kube, ("replay-done", "replay-running", "replay-restarted", "replay-evicted"))
    phases.start()
    try:
        for controller in controllers:
            stacks.restart(stack, controller.name, kill=False)
        asyncio.run(_until_consumed(stack.nats_url, consumers))
        restarted = _wait_for(
            kube, "replay-restarted", lambda s: _phase(s) == "Running" and s.get("retryCount") == 1
        )
        evicted = _wait_for(
            kube, "replay-evicted", lambda s: _phase(s) == "Running" and s.get("retryCount") == 1
        )
        time.sleep(1)  # anything the last replayed messages set off has happened
        after = _owned_objects(kube)
        for index in (0, 1):
            kube.control(f"/simulator/v1/namespaces/default/pods/replay-running-worker-{index}/succeed", {})
        _wait_for(kube, "replay-running", lambda s: _phase(s) == "Completed")
        # The watch polls on its own thread: it must have looked since, or a loaded machine ends it
        # before it saw the phase this thread just saw.
        _until(lambda: phases.seen["replay-running"][-1:] == ["Completed"])
    finally:
        phases.stop.set()
        phases.join()

    assert restarted.get("running") == 2
    assert evicted.get("running") == 2
    # RestartJob makes the restarted job's pods, PodGroup and plugin objects anew, as in Volcano;
    # everything else keeps its uid, and every object exists once, under the same name as before.
    restarted_jobs = ("replay-restarted", "replay-evicted")
    untouched = {key: uid for key, uid in before.items() if not key[1].startswith(restarted_jobs)}
    assert {key: after.get(key) for key in untouched} == untouched, "no pod or object was made again"
    assert set(after) == set(before), "the same objects, none missing and none extra"
    for name in restarted_jobs:
        assert sorted(_names(kube, "Pod", f"volcano.sh/job-name={name}")) == [
            f"{name}-worker-0",
            f"{name}-worker-1",
        ]
    assert phases.seen == {
        "replay-done": ["Completed"],
        "replay-running": ["Running", "Completed"],
        "replay-restarted": ["Running", "Restarting", "Pending", "Running"],
        "replay-evicted": ["Running", "Restarting", "Pending", "Running"],
    }

    # The phase is written before its announcement leaves the outbox: give the relay a moment.
    def announced_completion() -> dict[str, list[str]] | None:
        seen = asyncio.run(_phase_changes(stack.nats_url, since=replay_started))
        return seen if "Completed" in seen.get("replay-running", []) else None

    announced = eventually(announced_completion, "replay-running's Completed announced", within=15, every=0.2)
    assert announced == {
        "replay-restarted": ["Restarting", "Pending", "Running"],
        "replay-evicted": ["Restarting", "Pending", "Running"],
        "replay-running": ["Completed"],
    }, "each transition announced once, and none again"


class PhaseWatch(threading.Thread):
    """Polls jobs' phases; keeps each job's sequence of distinct phases as a user would see it."""

    def __init__(self, kube: Kube, names: tuple[str, ...]) -> None:
        super().__init__(daemon=True)
        self.kube, self.names = kube, names
        self.stop = threading.Event()
        self.seen: dict[str, list[str]] = {name: [] for name in names}

    def run(self) -> None:
        while not self.stop.is_set():
            for name in self.names:
                phase = _phase(_get(self.kube, name).get("status") or {})
                if phase and (not self.seen[name] or self.seen[name][-1] != phase):
                    self.seen[name].append(phase)
            time.sleep(0.05)


def _owned_objects(kube: Kube) -> dict[tuple[str, str], str]:
    """(kind, name) -> uid of everything the controller made for the jobs in namespace default."""
    found: dict[tuple[str, str], str] = {}
    for kind in OWNED_KINDS:
        for obj in kube.list_objects(kind, "default"):
            meta = obj["metadata"]
            if meta["name"].startswith("replay-"):
                found[(kind, meta["name"])] = meta["uid"]
    return found


def _until(holds: Callable[[], bool], within: float = 30) -> None:
    eventually(holds, within=within, every=0.2)


def _names(kube: Kube, kind: str, selector: str) -> list[str]:
    return [o["metadata"]["name"] for o in kube.list_objects(kind, "default", selector)]


def _controller_consumers(controllers: list[stacks.Process]) -> list[tuple[str, str]]:
    """Each controller replica's durable consumers: one on CLUSTER, one on DECISIONS."""
    numbers = [int(controller.env.get("CONTROLLER_REPLICA", "0")) for controller in controllers]
    return [
        (stream, replica_durable(durable, number))
        for number in numbers
        for stream, durable in (
            (subjects.CLUSTER_STREAM, "controller"),
            (subjects.DECISIONS_STREAM, "controller-decisions"),
        )
    ]


async def _forget_controller_consumers(url: str, consumers: list[tuple[str, str]]) -> int:
    """Delete the controllers' durable consumers; returns how many messages their streams hold."""
    connection = await nats.connect(NatsSettings(url=url).servers)
    try:
        jetstream = connection.jetstream()
        held = 0
        for stream, durable in consumers:
            await jetstream.delete_consumer(stream, durable)
            held += (await jetstream.stream_info(stream)).state.messages
        return held
    finally:
        await connection.close()


async def _until_consumed(url: str, consumers: list[tuple[str, str]], within: float = 120) -> None:
    connection = await nats.connect(NatsSettings(url=url).servers)
    try:
        jetstream = connection.jetstream()

        async def consumed() -> bool:
            infos = [await jetstream.consumer_info(s, d) for s, d in consumers]
            return all(i.num_pending == 0 and i.num_ack_pending == 0 for i in infos)

        await until(consumed, "the controller consuming its streams again", within=within, every=0.2)
    finally:
        await connection.close()


async def _phase_changes(url: str, *, since: float) -> dict[str, list[str]]:
    """The phases `jobs.phase.*` announced for each job after `since`, in order."""
    connection = await nats.connect(NatsSettings(url=url).servers)
    changes: dict[str, list[str]] = defaultdict(list)
    try:
        jetstream = connection.jetstream()
        state = (await jetstream.stream_info(subjects.JOBS_STREAM)).state
        for sequence in range(state.first_seq, state.last_seq + 1):
            message = await jetstream.get_msg(subjects.JOBS_STREAM, sequence)
            event = json.loads(message.data or b"{}")
            data = event.get("data") or {}
            moment = datetime.fromisoformat(event["time"].replace("Z", "+00:00")).timestamp()
            if message.subject.startswith("jobs.phase.") and moment >= since:
                changes[data["name"]].append(data["phase"])
    finally:
        await connection.close()
    return dict(changes)
