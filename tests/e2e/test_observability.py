"""What a platform team watching Phalanx sees: Volcano's metrics on /metrics, and Kubernetes Events.

On the real stack (`phalanx up`: watcher, admission, controller and scheduler over NATS and
PostgreSQL against the simulator), a queue with a 4-CPU capability gets a job that runs (2 pods
of 1 CPU) and a gang that waits (its pods select a node label no node has). The test then scrapes
each service's /metrics as Prometheus would and reads the Events as `kubectl` shows them:
- the scheduler's Volcano-named queue gauges equal the running gang's request, the waiting gang is
  counted as unschedulable with its missing members, and attempts are counted by result;
- the controller counts the queue's PodGroups per phase;
- each bound pod has a `Scheduled` Event; each waiting pod one `FailedScheduling` Event with
  Volcano's gang message, written once and not once per cycle;
- a preemption (the scheduler scenario 01, run last) counts an attempt and its victims, and each
  victim pod has an `Evict` Event.
"""

from __future__ import annotations

import json
import re
import shutil
import time
import urllib.request
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from phalanx import stack as stacks
from phalanx.scenario import ExternalStack, run_files
from tests import waiting
from tests.e2e.conftest import ServiceLogs, kubectl

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed"),
]

NAMESPACE = "metrics-e2e"
QUEUE = "metrics-q"
WAIT_SECONDS = 120.0
# A whole stack acts on its own time: look every half second, for up to WAIT_SECONDS.
eventually = partial(waiting.eventually, within=WAIT_SECONDS, every=0.5)
PREEMPTION = Path(__file__).parent / "scenarios" / "scheduler" / "01-preempt-within-queue.yaml"
SAMPLE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(stack: stacks.Stack, service: str) -> Samples:
    """The service's metrics as a dashboard reads them on a scaled stack too: the scheduler's from
    the replica leading (`phalanx_scheduler_leader == 1`), where the cycles run; every other
    service's summed over its replicas (`sum by` every label), as each does its share."""
    each = [_scrape_one(process.health_port) for process in stack.replicas(service)]
    if service == "scheduler" and len(each) > 1:
        leading = [samples for samples in each if value(samples, "phalanx_scheduler_leader") == 1]
        return leading[0] if leading else each[0]
    summed: Samples = {}
    for samples in each:
        for key, number in samples.items():
            summed[key] = summed.get(key, 0.0) + number
    return summed


def _scrape_one(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        assert response.status == 200
        text = response.read().decode()
    # Read as Prometheus stores them: prometheus_client's parser would rename Volcano's counters
    # that carry no `_total` (volcano_total_preemption_attempts) to names nobody queries.
    samples: Samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, labels, number = SAMPLE.fullmatch(line).groups()  # type: ignore[union-attr]
            samples[(name, frozenset(LABEL.findall(labels or "")))] = float(number)
    return samples


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def labelled(samples: Samples, name: str, label: str, prefix: str) -> dict[str, float]:
    return {
        dict(labels)[label]: v
        for (sample, labels), v in samples.items()
        if sample == name and dict(labels).get(label, "").startswith(prefix)
    }


def job(name: str, *, node_selector: dict[str, str] | None = None) -> dict[str, Any]:
    """A Volcano Job of two 1-CPU pods that start together, in the test's queue."""
    requests = {"requests": {"cpu": "1", "memory": "512Mi"}}
    template = {"spec": {"containers": [{"name": "main", "image": "busybox", "resources": requests}]}}
    if node_selector:
        template["spec"]["nodeSelector"] = node_selector
    spec = {
        "queue": QUEUE,
        "minAvailable": 2,
        "tasks": [{"name": "worker", "replicas": 2, "template": template}],
    }
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": spec,
    }


def apply(stack: stacks.Stack, *objects: dict[str, Any]) -> None:
    applied = kubectl(stack, "apply", "-f", "-", stdin=yaml.safe_dump_all(objects))
    assert applied.returncode == 0, applied.stderr


@pytest.fixture(scope="module")
def workload(stack: stacks.Stack) -> Iterator[None]:
    kubectl(stack, "create", "namespace", NAMESPACE)  # "already exists" on a rerun is fine
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": QUEUE},
        "spec": {"weight": 2, "capability": {"cpu": "4", "memory": "8Gi"}},
    }
    apply(stack, queue)
    eventually(
        lambda: kubectl(stack, "get", "queue", QUEUE, "-o", "jsonpath={.status.state}").stdout == "Open",
        "the queue to open",
    )
    apply(stack, job("metrics-run"), job("metrics-wait", node_selector={"phalanx.test/nowhere": "true"}))
    yield
    kubectl(stack, "delete", "jobs.batch.volcano.sh", "--all", "-n", NAMESPACE, "--wait=false")


def pod_phase(stack: stacks.Stack, name: str) -> str:
    return kubectl(stack, "get", "pod", name, "-n", NAMESPACE, "-o", "jsonpath={.status.phase}").stdout


def events_of(stack: stacks.Stack, pod: str, reason: str) -> list[dict[str, Any]]:
    listed = kubectl(
        stack,
        "get",
        "events",
        "-n",
        NAMESPACE,
        "--field-selector",
        f"involvedObject.name={pod}",
        "-o",
        "json",
    )
    assert listed.returncode == 0, listed.stderr
    return [e for e in json.loads(listed.stdout)["items"] if e.get("reason") == reason]


def test_scheduler_exports_volcanos_queue_and_gang_metrics(stack: stacks.Stack, workload: None) -> None:
    for pod in ("metrics-run-worker-0", "metrics-run-worker-1"):
        eventually(lambda pod=pod: pod_phase(stack, pod) == "Running", f"{pod} to run")

    def settled() -> Samples | None:
        samples = scrape(stack, "scheduler")
        waiting = labelled(samples, "volcano_unschedule_task_count", "job_id", f"{NAMESPACE}/metrics-wait")
        allocated = value(samples, "volcano_queue_allocated_milli_cpu", queue_name=QUEUE)
        return samples if waiting and allocated == 2000 else None

    samples = eventually(settled, "the scheduler to count the running job and the waiting gang")

    # The queue's figures are the running gang's requests, in Volcano's units.
    assert value(samples, "volcano_queue_allocated_memory_bytes", queue_name=QUEUE) == 2 * 512 * 1024**2
    assert value(samples, "volcano_queue_request_milli_cpu", queue_name=QUEUE) == 4000
    assert value(samples, "volcano_queue_capacity_milli_cpu", queue_name=QUEUE) == 4000
    assert value(samples, "volcano_queue_capacity_memory_bytes", queue_name=QUEUE) == 8 * 1024**3
    assert value(samples, "volcano_queue_weight", queue_name=QUEUE) == 2
    assert value(samples, "volcano_queue_overused", queue_name=QUEUE) in (0.0, 1.0)
    share = value(samples, "volcano_queue_share", queue_name=QUEUE)
    assert share is not None
    assert share > 0
    # The waiting gang misses both of its minimum members; it is among the unschedulable jobs.
    waiting = labelled(samples, "volcano_unschedule_task_count", "job_id", f"{NAMESPACE}/metrics-wait")
    assert list(waiting.values()) == [2.0]
    assert (value(samples, "volcano_unschedule_job_count") or 0) >= 1
    assert not labelled(samples, "volcano_unschedule_task_count", "job_id", f"{NAMESPACE}/metrics-run")
    # Attempts by result: the two bound pods, and the waiting pods at every cycle they were tried.
    assert (value(samples, "volcano_schedule_attempts_total", result="scheduled") or 0) >= 2
    assert (value(samples, "volcano_schedule_attempts_total", result="unschedulable") or 0) >= 2
    assert (value(samples, "volcano_e2e_scheduling_latency_milliseconds_count") or 0) >= 1
    assert (value(samples, "volcano_e2e_job_scheduling_latency_milliseconds_count") or 0) >= 1
    # Phalanx's own: this scheduler leads, and its outbox is measured.
    assert value(samples, "phalanx_scheduler_leader") == 1
    assert (value(samples, "phalanx_scheduler_leadership_changes_total", change="acquired") or 0) >= 1
    assert value(samples, "phalanx_outbox_depth", table="scheduler_outbox") is not None
    assert (value(samples, "phalanx_scheduler_last_cycle_timestamp_seconds") or 0) > time.time() - 60


def test_controller_counts_podgroups_per_queue_and_phase(stack: stacks.Stack, workload: None) -> None:
    def counted() -> Samples | None:
        samples = scrape(stack, "controller")
        running = value(samples, "volcano_queue_pod_group_running_count", queue_name=QUEUE)
        inqueue = value(samples, "volcano_queue_pod_group_inqueue_count", queue_name=QUEUE)
        return samples if (running, inqueue) == (1, 1) else None

    samples = eventually(counted, "one Running and one Inqueue PodGroup in the queue")
    assert value(samples, "volcano_queue_pod_group_pending_count", queue_name=QUEUE) == 0
    assert (value(samples, "volcano_controller_job_to_pod_creation_latency_milliseconds_count") or 0) >= 4
    handled = labelled(samples, "phalanx_consumer_handled_total", "durable", "controller-decisions")
    assert sum(handled.values()) >= 1


def test_every_service_serves_metrics(stack: stacks.Stack) -> None:
    for service in stacks.SERVICES:
        samples = scrape(stack, service)
        assert any(name.startswith("phalanx_") for name, _ in samples), service


def test_bound_pods_have_scheduled_and_waiting_pods_failed_scheduling_events(
    stack: stacks.Stack, workload: None
) -> None:
    for pod in ("metrics-run-worker-0", "metrics-run-worker-1"):
        node = eventually(
            lambda pod=pod: (
                kubectl(stack, "get", "pod", pod, "-n", NAMESPACE, "-o", "jsonpath={.spec.nodeName}").stdout
            ),
            f"{pod} to be bound",
        )
        scheduled = eventually(lambda pod=pod: events_of(stack, pod, "Scheduled"), f"Scheduled on {pod}")
        assert [e["message"] for e in scheduled] == [f"Successfully assigned {NAMESPACE}/{pod} to {node}"]
        assert scheduled[0]["type"] == "Normal"
        assert scheduled[0]["source"]["component"] == "volcano"

    pod = "metrics-wait-worker-0"
    failed = eventually(
        lambda: events_of(stack, pod, "FailedScheduling"), "FailedScheduling on the waiting pod"
    )
    assert failed[0]["type"] == "Warning"
    assert "tasks in gang unschedulable" in failed[0]["message"], failed[0]["message"]
    # `kubectl describe` tells the same story.
    described = kubectl(stack, "describe", "pod", pod, "-n", NAMESPACE)
    assert described.returncode == 0, described.stderr
    assert "FailedScheduling" in described.stdout
    assert "tasks in gang unschedulable" in described.stdout
    # The gang keeps waiting for many cycles (one a second); its pod's Event is not rewritten
    # each cycle: the same message stays one Event.
    time.sleep(5)
    assert len(events_of(stack, pod, "FailedScheduling")) == 1


def test_a_bound_job_has_volcanos_per_job_gauges(stack: stacks.Stack, workload: None) -> None:
    labels = {"job_namespace": NAMESPACE, "queue": QUEUE}

    def gauges() -> Samples | None:
        samples = scrape(stack, "scheduler")
        return (
            samples
            if labelled(samples, "volcano_e2e_job_scheduling_duration", "job_name", "metrics-run")
            else None
        )

    samples = eventually(gauges, "the running job's per-job gauges")
    job_name = next(iter(labelled(samples, "volcano_e2e_job_scheduling_duration", "job_name", "metrics-run")))
    duration = value(samples, "volcano_e2e_job_scheduling_duration", job_name=job_name, **labels)
    started = value(samples, "volcano_e2e_job_scheduling_start_time", job_name=job_name, **labels)
    last = value(samples, "volcano_e2e_job_scheduling_last_time", job_name=job_name, **labels)
    assert duration is not None
    assert started is not None
    assert last is not None
    # From the job's creation to its bind, in milliseconds, and both times as Unix seconds.
    assert 0 <= duration <= 120_000
    assert started <= last <= time.time()
    assert last - started == pytest.approx(duration / 1000, abs=1.0)


def test_api_requests_are_timed_by_verb_and_the_watcher_counts_its_lists(
    stack: stacks.Stack, workload: None
) -> None:
    controller = scrape(stack, "controller")
    # The controller created the job's pods and bound them: timed as create on pods and pods/binding.
    created = value(
        controller, "phalanx_kube_api_request_duration_seconds_count", verb="create", resource="pods"
    )
    bound = value(
        controller, "phalanx_kube_api_request_duration_seconds_count", verb="create", resource="pods/binding"
    )
    assert (created or 0) >= 2
    assert (bound or 0) >= 2
    watcher = scrape(stack, "watcher")
    assert (
        value(watcher, "phalanx_kube_api_request_duration_seconds_count", verb="list", resource="jobs") or 0
    ) >= 1
    assert (value(watcher, "phalanx_kube_api_watches_total", resource="pods") or 0) >= 1
    # Each kind was listed once at start.
    assert (value(watcher, "phalanx_watcher_relists_total", kind="Pod", reason="start") or 0) >= 1


def restore_default_scheduler_configuration(stack: stacks.Stack) -> None:
    """Remove the scenario's jobs (their pending pods keep room reserved on the nodes) and the
    ConfigMap it wrote, and wait until the scheduler runs its default configuration again."""
    logs = ServiceLogs(stack, "scheduler")
    kubectl(stack, "delete", "vcjob", "low", "high", "-n", "default", "--ignore-not-found", "--timeout=60s")
    kubectl(
        stack,
        "delete",
        "pods",
        "-n",
        "default",
        "-l",
        "volcano.sh/job-name in (low,high)",
        "--grace-period=0",
        "--force",
    )
    kubectl(
        stack,
        "delete",
        "configmap",
        "volcano-scheduler-configmap",
        "-n",
        "volcano-system",
        "--ignore-not-found",
    )

    def reloaded() -> bool:
        return any(
            "scheduler configuration loaded" in line and '"preempt"' not in line for line in logs.new_lines()
        )

    eventually(reloaded, "the scheduler to load its default configuration")


def test_a_preemption_is_counted_with_its_victims_and_evict_events(stack: stacks.Stack) -> None:
    """Last in this file: the scenario resets the cluster (its nodes, queues and jobs) to its own,
    and the scheduler's configuration to one with preempt, which is put back to the default after."""
    before = value(scrape(stack, "scheduler"), "volcano_total_preemption_attempts") or 0
    lines: list[str] = []
    try:
        report = run_files([PREEMPTION], ExternalStack(Path(stack.state_dir)), emit=lines.append)
    finally:
        restore_default_scheduler_configuration(stack)
    assert report.failed == 0, "\n".join(lines)

    samples = scrape(stack, "scheduler")
    assert (value(samples, "volcano_total_preemption_attempts") or 0) > before
    # The high-priority gang needs two pods' room: at least two victims were chosen.
    assert (value(samples, "volcano_pod_preemption_victims") or 0) >= 2
    evicted = kubectl(
        stack, "get", "events", "-n", "default", "--field-selector", "reason=Evict", "-o", "json"
    )
    assert evicted.returncode == 0, evicted.stderr
    messages = [
        e["message"] for e in json.loads(evicted.stdout)["items"] if e["involvedObject"]["kind"] == "Pod"
    ]
    assert "Pod is evicted, because of preempt" in messages
    # kube-scheduler's Preempted Event on each victim pod and on the Job that owns it.
    preempted = kubectl(
        stack, "get", "events", "-n", "default", "--field-selector", "reason=Preempted", "-o", "json"
    )
    assert preempted.returncode == 0, preempted.stderr
    on = {(e["involvedObject"]["kind"], e["message"]) for e in json.loads(preempted.stdout)["items"]}
    assert any(
        kind == "Pod" and message.startswith("Preempted by pod group default/high") for kind, message in on
    )
    assert any(kind == "Job" and "preempted by pod group default/high" in message for kind, message in on)
