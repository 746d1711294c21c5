"""One chaos run: the stack, the seeded gangs and faults on their timelines, sampled checks, the
wait for quiescence and the oracle's final verdict.

Three threads share the run: the main one submits gangs at their planned instants (retrying a
create the API refused while admission was down, as a user's client would), one injects the
faults in order, and one samples the oracle over the trace so far (I1, I2, I3, I6's pods) every
few seconds, so a violation is reported with the moment it was first seen. After the last gang and
fault the run waits until every job is terminal, or `settle_s` passes, and judges the whole trace
(all seven invariants, invariants.judge).
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from phalanx import stack as stacks
from phalanx.chaos import faults, invariants, oracle, plan
from phalanx.scenario.kube import Kube, KubeError
from shared.domain.resources import Resources

NODES = [{"namePrefix": "chaos-node-", "count": 6, "cpu": "8", "memory": "32Gi"}]
SAMPLE_EVERY_S = 5.0
CREATE_RETRY_S = 120.0


@dataclass(frozen=True)
class ChaosSettings:
    seed: int = 1
    duration_s: float = 600.0
    gangs: int = 40
    fault_every_s: float = 30.0
    settle_s: float = 300.0  # after the timeline: how long every job may take to finish
    lease_s: float = 10.0  # the scheduler's lease (SCHEDULER_LEASE_SECONDS); a pause exceeds it
    state_dir: Path | None = None  # default: a temporary folder, removed afterwards
    # `phalanx up --scale` of the stack (phalanx.scale), e.g. (("nats", 3), ("admission", 2)).
    scale: tuple[tuple[str, int], ...] = ()
    # These faults, in this order, one every `fault_every_s`, instead of the seeded plan.
    fault_kinds: tuple[str, ...] = ()


@dataclass
class ChaosResult:
    settings: ChaosSettings
    verdict: oracle.Verdict
    fault_log: list[str] = field(default_factory=list)
    sampled_violations: list[str] = field(default_factory=list)
    samples: int = 0
    wall_s: float = 0.0
    # The gang partly bound longest while the controller was being killed and restarted.
    longest_across_controller_restart: tuple[str, float] = ("", 0.0)


class _Sampler(threading.Thread):
    def __init__(self, read: Callable[[], oracle.Verdict], started: float) -> None:
        super().__init__(daemon=True, name="chaos-sampler")
        self.read, self.started = read, started
        self.stop = threading.Event()
        self.samples = 0
        self.first_seen: dict[str, str] = {}

    def run(self) -> None:
        while not self.stop.wait(SAMPLE_EVERY_S):
            with contextlib.suppress(KubeError, OSError):
                verdict = self.read()
                self.samples += 1
                for violation in verdict.violations:
                    self.first_seen.setdefault(
                        violation.detail, f"{time.monotonic() - self.started:6.1f} s  {violation.detail}"
                    )


class _Injector(threading.Thread):
    def __init__(
        self,
        stack: stacks.Stack,
        injections: list[plan.FaultInjection],
        settings: ChaosSettings,
        started: float,
        say: Callable[[str], None],
    ) -> None:
        super().__init__(daemon=True, name="chaos-faults")
        self.stack, self.injections, self.settings = stack, injections, settings
        self.started, self.say = started, say
        self.log: list[str] = []
        self.spans: list[tuple[str, float, float]] = []  # kind, wall-clock start and end
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            for injection in self.injections:
                _sleep_until(self.started + injection.at)
                begun, wall = time.monotonic(), time.time()
                done = faults.inject(self.stack, injection.kind, lease_seconds=self.settings.lease_s)
                self.spans.append((injection.kind, wall, time.time()))
                line = (
                    f"{begun - self.started:6.1f} s  {injection.kind:<18} {done} "
                    f"({time.monotonic() - begun:.1f} s)"
                )
                self.log.append(line)
                self.say(line)
        except BaseException as error:  # reported by the run, which then fails
            self.error = error


def run(settings: ChaosSettings, say: Callable[[str], None] = print) -> ChaosResult:
    with contextlib.ExitStack() as cleanup:
        state_dir = settings.state_dir or Path(cleanup.enter_context(tempfile.TemporaryDirectory()))
        nodes_file = state_dir / "chaos-nodes.yaml"
        state_dir.mkdir(parents=True, exist_ok=True)
        nodes_file.write_text(yaml.safe_dump(NODES))
        say(f"starting the stack in {state_dir}")
        scale = dict(settings.scale)
        stack = stacks.up(state_dir, nodes_file=nodes_file, durable_postgres=False, scale=scale)
        cleanup.callback(stacks.down, state_dir)
        kube = Kube(Path(stack.kubeconfig), stack.simulator_url)
        cleanup.callback(kube.close)
        return _drive(stack, kube, settings, say)
    raise AssertionError("unreachable")  # pragma: no cover - ExitStack does not swallow


def _drive(
    stack: stacks.Stack, kube: Kube, settings: ChaosSettings, say: Callable[[str], None]
) -> ChaosResult:
    submissions = plan.gangs(settings.seed, settings.duration_s, settings.gangs)
    injections = plan.faults(settings.seed, settings.duration_s, settings.fault_every_s)
    if settings.fault_kinds:
        every = settings.fault_every_s
        kinds = settings.fault_kinds
        injections = [plan.FaultInjection(every * (i + 1), kind) for i, kind in enumerate(kinds)]
    say(
        f"{len(submissions)} gangs and {len(injections)} faults over {settings.duration_s:.0f} s, "
        f"seed {settings.seed}"
    )
    create_retrying(kube, plan.capped_queue())
    allocatable = _allocatable(kube)
    started = time.monotonic()
    sampler = _Sampler(lambda: _judge(kube, allocatable, quiescent=False), started)
    injector = _Injector(stack, injections, settings, started, say)
    sampler.start()
    injector.start()
    submitted: list[str] = []
    try:
        for submission in submissions:
            _sleep_until(started + submission.at)
            create_retrying(kube, submission.manifest())
            submitted.append(f"{plan.NAMESPACE}/{submission.name}")
        injector.join()
        if injector.error is not None:
            raise RuntimeError(f"a fault could not be carried out: {injector.error}") from injector.error
        say(f"{time.monotonic() - started:6.1f} s  timeline done; waiting for every job to finish")
        _wait_for_jobs(kube, submitted, settings.settle_s)
    finally:
        sampler.stop.set()
        sampler.join()
    spans = [invariants.FaultSpan(kind, a, b) for kind, a, b in injector.spans]
    verdict = _judge(kube, allocatable, submitted=submitted, faults=spans, quiescent=True)
    if settings.state_dir is not None:  # kept, so the run can be judged again offline
        trace = kube.control("/simulator/v1/audit/trace", method="GET")
        kept = {"trace": trace, "faults": injector.spans}
        (settings.state_dir / "chaos-trace.json").write_text(json.dumps(kept))
    controller_down = [(a, b) for kind, a, b in injector.spans if kind == "kill:controller"]
    return ChaosResult(
        settings,
        verdict,
        injector.log,
        list(sampler.first_seen.values()),
        sampler.samples,
        time.monotonic() - started,
        oracle.longest_across(verdict.windows, controller_down, end=time.time()),
    )


def _sleep_until(moment: float) -> None:
    time.sleep(max(0.0, moment - time.monotonic()))


def create_retrying(kube: Kube, manifest: dict[str, Any]) -> None:
    """Create as a user's client would, retrying what a fault refused (admission down: the webhook
    call fails; NATS away); a create that went through before its answer was lost counts as done."""
    deadline = time.monotonic() + CREATE_RETRY_S
    while True:
        try:
            kube.create(manifest)
            return
        except KubeError as error:
            if error.conflict:
                return  # an earlier attempt went through after all
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)


def _allocatable(kube: Kube) -> dict[str, dict[str, int]]:
    return {
        node["metadata"]["name"]: dict(Resources.parse(node["status"]["allocatable"]))
        for node in kube.list_objects("Node")
    }


def _job_phases(kube: Kube) -> dict[str, str]:
    return {
        f"{job['metadata']['namespace']}/{job['metadata']['name']}": (
            ((job.get("status") or {}).get("state") or {}).get("phase") or ""
        )
        for job in kube.list_objects("Job", plan.NAMESPACE)
    }


def _wait_for_jobs(kube: Kube, submitted: list[str], settle_s: float) -> None:
    deadline = time.monotonic() + settle_s
    while time.monotonic() < deadline:
        with contextlib.suppress(KubeError):
            phases = _job_phases(kube)
            if all(phases.get(job) in oracle.TERMINAL_JOB_PHASES for job in submitted):
                return
        time.sleep(2.0)


def _capabilities(kube: Kube) -> dict[str, dict[str, int]]:
    return {
        queue["metadata"]["name"]: dict(Resources.parse(queue["spec"]["capability"]))
        for queue in kube.list_objects("Queue")
        if (queue.get("spec") or {}).get("capability")
    }


def _scheduled_events(kube: Kube) -> dict[str, int]:
    """Per pod uid, how many times the scheduler's `Scheduled` Event was recorded (summed counts)."""
    counts: dict[str, int] = {}
    for event in kube.list_objects("Event", plan.NAMESPACE):
        uid = (event.get("involvedObject") or {}).get("uid")
        if event.get("reason") == "Scheduled" and uid:
            counts[uid] = counts.get(uid, 0) + int(event.get("count") or 1)
    return counts


def _judge(
    kube: Kube,
    allocatable: dict[str, dict[str, int]],
    *,
    submitted: list[str] | None = None,
    faults: list[invariants.FaultSpan] | None = None,
    quiescent: bool,
) -> oracle.Verdict:
    trace = kube.control("/simulator/v1/audit/trace", method="GET")
    return invariants.judge(
        trace,
        allocatable=allocatable,
        capability=_capabilities(kube),
        scheduled_events=_scheduled_events(kube) if quiescent else None,
        faults=faults or [],
        submitted=submitted or [],
        job_phases=_job_phases(kube) if quiescent else None,
        quiescent=quiescent,
    )
