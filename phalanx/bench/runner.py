"""One benchmark run: start the whole stack on the simulator, place the warm-up pods, create the
measured load with concurrent clients, wait until it is bound (or stops progressing), read the
counters again and stop the stack.

Everything runs on loopback and is bounded: the load is fixed by the scenario, and the wait ends
at `timeout_s` or after `stall_s` without a new bind (the contended scenario never binds all).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import nats
import yaml
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from phalanx import stack as stacks
from phalanx.bench import breakdown, figures, probes, profiling, topology, workloads
from phalanx.bench import ceiling as ceilings
from phalanx.bench.workloads import NAMESPACE, Scenario
from phalanx.progress import Silent, Steps
from shared.infra import local

# Volcano's own benchmark profile (benchmark/config/scheduler-config.yaml in volcano-sh/volcano).
SCHEDULER_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


@dataclass(frozen=True)
class RunSettings:
    qps: float | None = None  # the simulator's write limit; None = unthrottled
    scale: float = 1.0
    timeout_s: float = 600.0
    stall_s: float = 30.0
    keep_stack: bool = False
    profile_dir: Path | None = None  # py-spy profiles of every service while measuring, if set
    ceiling: bool = True  # also measure the machine's ceiling for the load (ceiling.py)


@dataclass
class Result:
    scenario: Scenario
    settings: RunSettings
    figures: figures.Figures
    cpu_seconds: dict[str, float]
    api_writes: dict[str, int]
    jetstream_messages: int
    postgres: probes.PostgresCounters
    create_failures: int
    environment: dict[str, str]
    notes: list[str] = field(default_factory=list)
    ceiling: ceilings.Ceiling | None = None
    scheduler_peak_rss_mib: float | None = None
    # The services' own counters over the run (probes.SERVICE_SERIES), `<service>:<series>`.
    service_metrics: dict[str, float] = field(default_factory=dict)
    placement: topology.TopologyFigures | None = None  # where the gangs landed (topology scenarios)
    writes: breakdown.Breakdown = field(default_factory=breakdown.Breakdown)  # by table and subject
    # With --profile: per service, the functions of ours its CPU went to, and their shares.
    hot_spots: dict[str, list[tuple[str, float]]] = field(default_factory=dict)

    @property
    def ceiling_ratio(self) -> float | None:
        """Phalanx's end-to-end pods/s as a fraction of the machine's ceiling in the same run."""
        if self.ceiling is None or not self.ceiling.pods_per_s:
            return None
        return self.figures.pods_per_s_end_to_end / self.ceiling.pods_per_s


def run(
    scenario: Scenario,
    settings: RunSettings,
    *,
    say: Callable[[str], object] = print,
    steps: Steps | None = None,
) -> Result:
    steps = steps or Silent()
    # A kept stack keeps its state directory (logs, kubeconfig); otherwise it goes with the run.
    with contextlib.ExitStack() as cleanup:
        state_dir = Path(tempfile.mkdtemp(prefix="phalanx-bench-"))
        if not settings.keep_stack:
            cleanup.callback(shutil.rmtree, state_dir, ignore_errors=True)
        nodes_file = state_dir / "nodes.yaml"
        nodes_file.write_text(yaml.safe_dump([scenario.nodes.nodes_file_entry()]))
        conf_file = state_dir / "volcano-scheduler.conf"
        conf_file.write_text(topology.scheduler_conf(SCHEDULER_CONF, scenario.topology))
        simulator_args = ["--no-default-scheduler"]
        if settings.qps:
            simulator_args += ["--qps", f"{settings.qps:g}", "--burst", str(int(settings.qps * 2))]
        stack = stacks.up(
            state_dir,
            nodes_file=nodes_file,
            scheduler_conf=conf_file,
            simulator_args=simulator_args,
            durable_postgres=False,  # as the recorded figures were measured
            steps=steps,
        )
        try:
            result = asyncio.run(_measure(stack, scenario, settings, say, steps))
        finally:
            if settings.keep_stack:
                say(f"stack kept running in {state_dir} (phalanx down --state-dir {state_dir})")
            else:
                steps.step("stopping the stack")
                stacks.down(state_dir)
        if settings.ceiling and not settings.keep_stack:
            # After the stack is down, so the ceiling has the machine as Phalanx's run had it.
            steps.step(f"the machine's ceiling: creating and binding {scenario.measured_pods} pods directly")
            result.ceiling = ceilings.measure(scenario, state_dir, nodes_file, simulator_args)
        return result


async def _measure(
    stack: stacks.Stack,
    scenario: Scenario,
    settings: RunSettings,
    say: Callable[[str], object],
    steps: Steps,
) -> Result:
    api = stack.simulator_url
    pids = {p.name: p.pid for p in stack.processes}
    pids |= {server.name: server.pid for server in local.load(Path(stack.state_dir))}
    connector = aiohttp.TCPConnector(limit=scenario.clients)
    async with aiohttp.ClientSession(api, connector=connector) as session:
        await _create(
            session,
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        )
        await topology.install(lambda p, b: _create(session, p, b), scenario.nodes.count, scenario.topology)
        if scenario.warm_pods:
            steps.step(f"placing {scenario.warm_pods} pods before measuring", total=scenario.warm_pods)
            warm = [workloads.single_pod(scenario, f"warm-{i:05d}") for i in range(scenario.warm_pods)]
            failures = await _create_all(session, [(_pods_path(), pod) for pod in warm], scenario.clients)
            await _wait_for_binds(session, scenario.warm_pods - failures, settings, say, steps)
        await _audit(session, "DELETE")
        await asyncio.sleep(1.0)  # let PostgreSQL publish its counters before the first reading

        cpu_before = probes.cpu_by_name(pids)
        js_before = await probes.jetstream_messages(stack.nats_url)
        pg_before = await probes.postgres_counters(stack.database_url)
        rows_before, tally = await breakdown.rows_by_table(stack.database_url), breakdown.SubjectTally()
        await tally.start(stack.nats_url)
        ports = {p.name: p.health_port for p in stack.processes}
        metrics_before = probes.service_counters(ports)

        requests, gang_minimum = _load(scenario)
        steps.step(
            f"creating {scenario.measured_pods} pods ({len(requests)} objects), {scenario.clients} clients"
        )
        profilers = profiling.start(stack, settings.profile_dir)
        started = time.time()
        gangs_created: dict[str, float] = {}
        failures = await _create_all(session, requests, scenario.clients, created_at=gangs_created)
        expected = scenario.measured_pods
        if failures:
            say(f"{failures} creates failed")
        steps.step(f"binding {expected} pods", total=expected)
        await _wait_for_binds(session, expected, settings, say, steps)
        profiling.stop(profilers, say)

        await asyncio.sleep(1.5)  # PostgreSQL backends flush their statistics about once a second
        cpu = {name: after - cpu_before[name] for name, after in probes.cpu_by_name(pids).items()}
        js_after = await probes.jetstream_messages(stack.nats_url)
        pg_after = await probes.postgres_counters(stack.database_url)
        rows_after = await breakdown.rows_by_table(stack.database_url)
        writes = breakdown.Breakdown(breakdown.minus(rows_after, rows_before), await tally.stop())
        metrics_after = probes.service_counters(ports)
        audit = await _audit(session, "GET", "/pods")
        placement = await topology.placement(
            session, _pods_path(), scenario.nodes.count, scenario.jobs, scenario.topology
        )
        scheduler_rss = probes.peak_rss_mib(pids["scheduler"]) if "scheduler" in pids else None

    return Result(
        scenario,
        settings,
        figures.compute(
            started=started,
            created=audit["podsCreated"],
            bound=audit["podsBound"],
            pods_expected=expected,
            gang_of=workloads.job_of_pod if scenario.jobs else (lambda key: key),
            gang_minimum=gang_minimum,
            gangs_created=gangs_created or None,
        ),
        cpu_seconds=cpu,
        api_writes=audit["writes"],
        jetstream_messages=sum(js_after.values()) - sum(js_before.values()),
        postgres=probes.PostgresCounters(
            pg_after.transactions - pg_before.transactions, pg_after.rows_written - pg_before.rows_written
        ),
        create_failures=failures,
        environment=await _environment(stack),
        scheduler_peak_rss_mib=scheduler_rss,
        service_metrics={key: metrics_after[key] - metrics_before.get(key, 0.0) for key in metrics_after},
        placement=placement,
        writes=writes,
        hot_spots=profiling.read_hot_spots(settings.profile_dir),
    )


def _pods_path() -> str:
    return f"/api/v1/namespaces/{NAMESPACE}/pods"


def _jobs_path() -> str:
    return f"/apis/batch.volcano.sh/v1alpha1/namespaces/{NAMESPACE}/jobs"


def _load(scenario: Scenario) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, int]]:
    """The measured creates, and the minimum of each gang they make (a single pod is a gang of one)."""
    requests: list[tuple[str, dict[str, Any]]] = []
    gang_minimum: dict[str, int] = {}
    for i in range(scenario.single_pods):
        name = f"pod-{i:05d}"
        requests.append((_pods_path(), workloads.single_pod(scenario, name)))
        gang_minimum[f"{NAMESPACE}/{name}"] = 1
    for i in range(scenario.jobs):
        name = f"j{i:05d}"
        requests.append((_jobs_path(), workloads.job(scenario, name)))
        gang_minimum[name] = scenario.replicas
    return requests, gang_minimum


async def _create(session: aiohttp.ClientSession, path: str, body: dict[str, Any]) -> bool:
    for attempt in range(5):
        async with session.post(path, json=body) as response:
            if response.status in (200, 201, 409):
                return True
            if response.status < 500 and response.status != 429:
                raise RuntimeError(f"creating {path} failed: {response.status} {await response.text()}")
        await asyncio.sleep(0.2 * (attempt + 1))
    return False


async def _create_all(
    session: aiohttp.ClientSession,
    requests: list[tuple[str, dict[str, Any]]],
    clients: int,
    *,
    created_at: dict[str, float] | None = None,
) -> int:
    """Create everything with `clients` concurrent workers; return how many creates failed."""
    pending = iter(requests)
    failures = 0

    async def worker() -> None:
        nonlocal failures
        for path, body in pending:
            sent = time.time()
            if not await _create(session, path, body):
                failures += 1
            elif created_at is not None and body["kind"] == "Job":
                created_at[body["metadata"]["name"]] = sent

    await asyncio.gather(*(worker() for _ in range(clients)))
    return failures


async def _audit(session: aiohttp.ClientSession, method: str, suffix: str = "") -> dict[str, Any]:
    async with session.request(method, f"/simulator/v1/audit{suffix}") as response:
        response.raise_for_status()
        answer: dict[str, Any] = await response.json()
        return answer


async def _wait_for_binds(
    session: aiohttp.ClientSession,
    expected: int,
    settings: RunSettings,
    say: Callable[[str], object],
    steps: Steps,
) -> None:
    deadline = time.monotonic() + settings.timeout_s
    last_count, last_progress = -1, time.monotonic()
    while time.monotonic() < deadline:
        bound = (await _audit(session, "GET"))["podsBoundCount"]
        steps.count(bound, expected)
        now = time.monotonic()
        if bound >= expected:
            return
        if bound != last_count:
            last_count, last_progress = bound, now
        elif now - last_progress > settings.stall_s:
            say(f"no bind for {settings.stall_s:g} s; {bound} of {expected} bound")
            return
        await asyncio.sleep(0.5)
    say(f"timed out after {settings.timeout_s:g} s")


async def _environment(stack: stacks.Stack) -> dict[str, str]:
    client = await nats.connect(stack.nats_url)
    nats_version = client._server_info.get("version", "?")
    await client.close()
    engine = create_async_engine(stack.database_url)
    async with engine.connect() as connection:
        pg_version = (await connection.execute(text("SHOW server_version"))).scalar_one()
    await engine.dispose()
    commit = await asyncio.to_thread(_git_commit)
    return {
        "cpu": _cpu_model(),
        "cores": str(len(_online_cpus())),
        "memory": _memory(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "nats-server": nats_version,
        "postgresql": str(pg_version),
        "phalanx": commit,
    }


def _git_commit() -> str:
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        return subprocess.run(
            ["git", "describe", "--always", "--dirty"], capture_output=True, text=True, check=True
        ).stdout.strip()
    return "?"


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "?"


def _online_cpus() -> set[int]:
    return os.sched_getaffinity(0)


def _memory() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                return f"{int(line.split()[1]) / 1024 / 1024:.0f} GiB"
    return "?"
