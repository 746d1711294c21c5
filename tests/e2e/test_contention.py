"""reliability.md §6.4 T21 and T22 on the whole stack, judged by the chaos oracle over the
simulated API server's own pod trace.

T22, a foreign scheduler: the simulator's stand-in for kube-scheduler binds plain pods
(`schedulerName: default-scheduler`) onto the same nodes while Phalanx places gangs. Phalanx sees
the foreign pods only through the watcher, so it may decide onto room the other scheduler has just
taken; the kubelet then refuses the pod (`OutOfcpu`), as a real one would. No node holds more
than it can allocate at any instant, no pod is bound twice, every gang is whole and every job
completes; the refusals that hit Phalanx's pods are counted (target 0) and never lose a job.
Since the race ends with no refusal, a second test forces one: the controller is held between a
gang's binds while foreign pods bound straight to the nodes take the room; the refused pods fail
(`OutOfcpu`), the job's policy restarts it, and it is placed again and completes.

T21, the preemption storm (volcano#377's shape): two queues of equal weight whose deserved shares
overlap, plus a queue created with weight 0 (kueue#6774's shape: admission defaults it to 1, as
Volcano does), share 12 slots; 24 single-pod jobs of two priorities arrive over 20 s and run until
the test ends. With preempt and reclaim on, the scheduler may evict to reach fair shares, but not
in a loop: no job's pod is evicted more than twice, every slot ends up used, and once arrivals
stop and the placements settle, a quiet window of well over five cycles sees no eviction at all.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from phalanx import stack as stacks
from phalanx.chaos import invariants, oracle
from phalanx.scenario import ExternalStack
from phalanx.scenario.kube import Kube
from phalanx.scenario.model import ClusterSpec
from services.scheduler.core.config import DEFAULT_CONF_TEXT
from shared.domain.resources import Resources
from tests.e2e.conftest import ServiceLogs
from tests.e2e.test_failpoints import controller_failpoint
from tests.e2e.test_restarts import job
from tests.waiting import eventually

pytestmark = pytest.mark.e2e


@pytest.fixture
def kube(stack: stacks.Stack) -> Iterator[Kube]:
    kube = Kube(Path(stack.kubeconfig), stack.simulator_url)
    yield kube
    kube.close()


def reset(stack: stacks.Stack, kube: Kube, cluster: dict[str, Any], conf: str | None = None) -> None:
    """The cluster as `cluster` says, and the oracle's trace started afresh."""
    ExternalStack(Path(stack.state_dir)).reset(ClusterSpec.model_validate(cluster), conf)
    kube.control("/simulator/v1/audit", method="DELETE")


def allocatable(kube: Kube) -> dict[str, dict[str, int]]:
    return {
        node["metadata"]["name"]: dict(Resources.parse(node["status"]["allocatable"]))
        for node in kube.list_objects("Node")
    }


def job_phases(kube: Kube) -> dict[str, str]:
    return {
        f"default/{j['metadata']['name']}": ((j.get("status") or {}).get("state") or {}).get("phase") or ""
        for j in kube.list_objects("Job", "default")
    }


def judged_trace(
    kube: Kube, nodes: dict[str, dict[str, int]], names: list[str]
) -> tuple[dict[str, Any], oracle.Verdict]:
    """The server's pod trace so far, and the oracle's verdict on it at quiescence, for the jobs
    `names` in namespace default."""
    trace = kube.control("/simulator/v1/audit/trace", method="GET")
    verdict = invariants.judge(
        trace,
        allocatable=nodes,
        capability={},
        submitted=[f"default/{name}" for name in names],
        job_phases=job_phases(kube),
    )
    return trace, verdict


def judged(kube: Kube, nodes: dict[str, dict[str, int]], names: list[str]) -> oracle.Verdict:
    return judged_trace(kube, nodes, names)[1]


def foreign_pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {"simulator.phalanx/run-seconds": "2"},
        },
        "spec": {
            "schedulerName": "default-scheduler",
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": "1", "memory": "256Mi"}},
                }
            ],
        },
    }


FOREIGN_PODS = 100  # at 5 a second: 20 s of contention
GANGS = 8  # 4 pods of 2 CPUs each, on 4 nodes of 8 CPUs


@pytest.mark.timeout(400)
def test_a_foreign_scheduler_racing_for_the_same_nodes_overcommits_nothing_and_loses_no_job(
    stack: stacks.Stack, kube: Kube
) -> None:
    reset(stack, kube, {"nodes": [{"namePrefix": "node-", "count": 4, "cpu": "8", "memory": "32Gi"}]})
    nodes = allocatable(kube)
    foreign_done = threading.Event()

    def foreign_scheduler_load() -> None:
        started = time.monotonic()
        for i in range(FOREIGN_PODS):
            time.sleep(max(0.0, started + i / 5 - time.monotonic()))
            kube.create(foreign_pod(f"foreign-{i}"))
        foreign_done.set()

    load = threading.Thread(target=foreign_scheduler_load, daemon=True)
    load.start()
    names = [f"gang-{i}" for i in range(GANGS)]
    for name in names:
        kube.create(job(name))
        time.sleep(2.0)
    load.join(timeout=120)
    assert foreign_done.is_set(), "every foreign pod was created"

    def all_done() -> bool:
        phases = job_phases(kube)
        assert all(phases.get(f"default/{n}") == "Completed" for n in names), phases
        foreign = [
            p for p in kube.list_objects("Pod", "default") if p["metadata"]["name"].startswith("foreign-")
        ]
        assert all((p.get("status") or {}).get("phase") in ("Succeeded", "Failed") for p in foreign)
        return True

    eventually(all_done, "every job and every foreign pod finished", within=240, every=1.0)
    trace, verdict = judged_trace(kube, nodes, names)
    changes = oracle.ordered(trace["records"])
    refused = {c.uid: c.group for c in changes if c.phase == "Failed" and c.reason.startswith("OutOf")}
    ours = sum(1 for group in refused.values() if group)
    foreign_bound = {c.uid for c in changes if c.node and not c.group}
    print(
        f"kubelet refusals: {ours} of Phalanx's pods, {len(refused) - ours} foreign; "
        f"{len(foreign_bound)} foreign pods bound; figures {verdict.figures}"
    )
    assert len(foreign_bound) == FOREIGN_PODS, "the foreign scheduler placed every one of its pods"
    assert verdict.violations == [], "no pod bound twice, no node over-committed, every gang whole"
    assert verdict.figures["gangs bound"] == GANGS


# Volcano's default tiers, with preempt and reclaim among the actions.
STORM_CONF = DEFAULT_CONF_TEXT.replace(
    '"enqueue, allocate, backfill"', '"enqueue, allocate, preempt, reclaim, backfill"'
)
STORM_CLUSTER = {
    "nodes": [{"namePrefix": "storm-", "count": 3, "cpu": "4", "memory": "16Gi"}],  # 12 slots
    # Deserved shares that overlap: each claims two thirds of the cluster.
    "queues": [
        {"name": "storm-a", "weight": 1, "reclaimable": True, "deserved": {"cpu": "8", "memory": "8Gi"}},
        {"name": "storm-b", "weight": 1, "reclaimable": True, "deserved": {"cpu": "8", "memory": "8Gi"}},
    ],
    "priorityClasses": [{"name": "storm-high", "value": 1000}, {"name": "storm-low", "value": 10}],
}
STORM_JOBS = 24
ARRIVALS_S = 20.0
QUIET_WINDOW_S = 10.0  # ten cycles of one second: twice the plan's K = 5


def storm_job(index: int) -> dict[str, Any]:
    queue = ("storm-a", "storm-b", "storm-zero")[index % 3]
    priority = ("storm-low", "storm-high")[index % 2]
    manifest = job(f"storm-{index}", replicas=1, queue=queue, priorityClassName=priority)
    task = manifest["spec"]["tasks"][0]
    del task["template"]["metadata"]  # runs until the test ends
    task["template"]["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "1", "memory": "256Mi"}
    return manifest


def evictions(kube: Kube) -> int:
    """`POST pods/eviction` calls the API server served since the trace was reset."""
    writes = kube.control("/simulator/v1/audit", method="GET")["writes"]
    return int(writes.get("POST pods/eviction", 0))


def evicted_per_pod(kube: Kube) -> Counter[str]:
    """How many times each pod name was evicted, from the controller's `Evict` Events."""
    counts: Counter[str] = Counter()
    for event in kube.list_objects("Event", "default"):
        involved = event.get("involvedObject") or {}
        if event.get("reason") == "Evict" and involved.get("kind") == "Pod":
            counts[str(involved.get("name"))] += int(event.get("count") or 1)
    return counts


def running_storm_pods(kube: Kube) -> int:
    return sum(
        1
        for p in kube.list_objects("Pod", "default")
        if p["metadata"]["name"].startswith("storm-")
        and (p.get("status") or {}).get("phase") == "Running"
        and not p["metadata"].get("deletionTimestamp")
    )


def wait_for_default_configuration(logs: ServiceLogs) -> None:
    eventually(
        lambda: any(
            "scheduler configuration loaded" in line and '"reclaim"' not in line for line in logs.new_lines()
        ),
        "the scheduler back on its default configuration",
        within=60,
    )


@pytest.mark.timeout(400)
def test_a_preemption_storm_settles_without_an_eviction_loop(stack: stacks.Stack, kube: Kube) -> None:
    logs = ServiceLogs(stack, "scheduler")
    reset(stack, kube, STORM_CLUSTER, STORM_CONF)
    try:
        eventually(
            lambda: any(
                "scheduler configuration loaded" in line and '"reclaim"' in line for line in logs.new_lines()
            ),
            "the scheduler running the storm's configuration",
            within=60,
        )
        zero = kube.create(
            {
                "apiVersion": "scheduling.volcano.sh/v1beta1",
                "kind": "Queue",
                "metadata": {"name": "storm-zero"},
                "spec": {"weight": 0, "reclaimable": True},
            }
        )
        assert zero["spec"]["weight"] == 1, "a weight of 0 is defaulted to 1, as Volcano does"
        started = time.monotonic()
        for index in range(STORM_JOBS):
            time.sleep(max(0.0, started + index * ARRIVALS_S / STORM_JOBS - time.monotonic()))
            kube.create(storm_job(index))
        # Arrivals have stopped: the placements settle with every slot used ...
        eventually(lambda: running_storm_pods(kube) == 12, "every slot used", within=120, every=0.5)
        settled = evictions(kube)
        # ... and stay settled: nothing is evicted over many cycles.
        time.sleep(QUIET_WINDOW_S)
        quiet = evictions(kube) - settled
        running = running_storm_pods(kube)
        per_pod = evicted_per_pod(kube)
    finally:
        back = ServiceLogs(stack, "scheduler")
        kube_reset = ExternalStack(Path(stack.state_dir))
        kube_reset.reset(ClusterSpec.model_validate({"nodes": [{"name": "node-1", "cpu": "8"}]}), None)
        wait_for_default_configuration(back)
    print(f"evictions: {settled} until settled, {quiet} in the quiet window; per pod {dict(per_pod)}")
    assert quiet == 0, "no eviction once the placements settled"
    assert running == 12, "every slot still used"
    assert all(count <= 2 for count in per_pod.values()), f"a pod evicted more than twice: {per_pod}"
    assert sum(per_pod.values()) == settled, "every eviction is on record"


def held_cpu(kube: Kube, node: str) -> int:
    """Milli-CPUs the pods bound to `node` hold, as its kubelet counts them."""
    held = 0
    for found in kube.list_objects("Pod"):
        if found["spec"].get("nodeName") == node and (found.get("status") or {}).get("phase") not in (
            "Succeeded",
            "Failed",
        ):
            for container in found["spec"]["containers"]:
                held += Resources.parse((container.get("resources") or {}).get("requests") or {}).get(
                    "cpu", 0
                )
    return held


def refused(kube: Kube, prefix: str) -> list[str]:
    return [
        p["metadata"]["name"]
        for p in kube.list_objects("Pod", "default")
        if p["metadata"]["name"].startswith(prefix)
        and (p.get("status") or {}).get("reason", "").startswith("OutOf")
    ]


@pytest.mark.timeout(300)
def test_a_gang_pod_refused_by_the_kubelet_after_a_foreign_pod_took_its_room_is_placed_again(
    stack: stacks.Stack, kube: Kube
) -> None:
    """T22's other half, forced: the controller is held between a gang's binds, and meanwhile a
    foreign pod bound straight to each node (`spec.nodeName`, no scheduler at all) takes the room
    the kubelet has left. The gang's later binds are refused (`OutOfcpu`); the job's policy
    restarts it, and once the foreign pods end it is placed again and completes."""
    reset(stack, kube, {"nodes": [{"namePrefix": "node-", "count": 2, "cpu": "8", "memory": "32Gi"}]})
    manifest = job("refused", policies=[{"event": "PodFailed", "action": "RestartJob"}])
    # The held binds (6 s before each of the last three) and the foreign pods' run (25 s) leave room
    # for a loaded machine: a taker made late still finds a later bind to refuse, and is still
    # running when that bind lands.
    with controller_failpoint(stack, "ctl.mid_bind_batch=sleep(6):3"):
        kube.create(manifest)
        eventually(
            lambda: any(p["spec"].get("nodeName") for p in kube.list_objects("Pod", "default")),
            "the gang's first bind",
            within=60,
        )
        for index, node in enumerate(("node-0", "node-1")):
            free = 8000 - held_cpu(kube, node)
            if free > 0:
                taker = foreign_pod(f"taker-{index}")
                taker["spec"]["nodeName"] = node
                taker["metadata"]["annotations"]["simulator.phalanx/run-seconds"] = "25"
                taker["spec"]["containers"][0]["resources"]["requests"]["cpu"] = f"{free}m"
                kube.create(taker)
        seen = eventually(lambda: refused(kube, "refused-"), "a gang pod refused by its kubelet", within=60)
    print(f"refused by the kubelet: {seen}")

    def completed() -> bool:
        phase = job_phases(kube).get("default/refused")
        assert phase == "Completed", phase
        return True

    eventually(completed, "the job placed again and Completed", within=180, every=1.0)
    final = [p for p in kube.list_objects("Pod", "default") if p["metadata"]["name"].startswith("refused-")]
    assert sorted(p["metadata"]["name"] for p in final) == [f"refused-worker-{i}" for i in range(4)]
    assert {(p.get("status") or {}).get("phase") for p in final} == {"Succeeded"}
