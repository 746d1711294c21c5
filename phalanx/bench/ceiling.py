"""The machine's ceiling for a scenario, measured in the same `phalanx bench` run: the load
generator creates the same pods and binds each itself, straight against a simulator of the same
cluster, with no Phalanx in between.

It runs after the stack is stopped, on a simulator of its own (same nodes file, same write
limit), with the same number of concurrent clients. The simulator and the load generator are all
that run, so its pods/s is the most this machine can do for the load at that moment; dividing
Phalanx's pods/s by it gives a figure that compares across runs on machines shared with others.
"""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from phalanx.bench import probes, workloads
from phalanx.bench.workloads import NAMESPACE, Scenario
from shared.infra import local

READY_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Ceiling:
    pods: int  # pods created and bound
    seconds: float  # first create sent → last bind served
    pods_per_s: float  # pods ÷ seconds, end to end as Phalanx's figure of the same name
    simulator_cpu_s: float
    generator_cpu_s: float


def pod_names(scenario: Scenario) -> list[str]:
    """The measured pods by name, as Phalanx's run makes them (a Job's as Volcano names them)."""
    names = [f"pod-{i:05d}" for i in range(scenario.single_pods)]
    names += [f"j{j:05d}-worker-{i}" for j in range(scenario.jobs) for i in range(scenario.replicas)]
    return names


def measure(scenario: Scenario, state_dir: Path, nodes_file: Path, simulator_args: list[str]) -> Ceiling:
    """Start a simulator of the scenario's cluster, create and bind every measured pod, stop it."""
    port = local.free_port()
    log_path = state_dir / "ceiling-simulator.log"
    with open(log_path, "ab") as log_file:
        simulator = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "services.simulator",
                "--port",
                str(port),
                "--kubeconfig",
                str(state_dir / "ceiling-kubeconfig"),
                "--nodes",
                str(nodes_file),
                *simulator_args,
            ],
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        return asyncio.run(_measure(scenario, f"http://127.0.0.1:{port}", simulator.pid))
    finally:
        simulator.send_signal(signal.SIGTERM)
        try:
            simulator.wait(timeout=20)
        except subprocess.TimeoutExpired:
            simulator.kill()
            simulator.wait()


async def _measure(scenario: Scenario, url: str, simulator_pid: int) -> Ceiling:
    connector = aiohttp.TCPConnector(limit=scenario.clients)
    async with aiohttp.ClientSession(url, connector=connector) as session:
        await _wait_ready(session)
        await _post(
            session,
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        )
        nodes = [f"bench-node-{i}" for i in range(scenario.nodes.count)]
        if scenario.warm_pods:
            await _create_and_bind(
                session, scenario, [f"warm-{i:05d}" for i in range(scenario.warm_pods)], nodes
            )
        async with session.delete("/simulator/v1/audit") as response:
            response.raise_for_status()
        simulator_before = probes.cpu_by_name({"simulator": simulator_pid})["simulator"]
        generator_before = _own_cpu()
        started = time.time()
        await _create_and_bind(session, scenario, pod_names(scenario), nodes)
        generator_cpu = _own_cpu() - generator_before
        simulator_cpu = probes.cpu_by_name({"simulator": simulator_pid})["simulator"] - simulator_before
        async with session.get("/simulator/v1/audit/pods") as response:
            response.raise_for_status()
            audit: dict[str, Any] = await response.json()
    bound = audit["podsBound"]
    last = max(bound.values(), default=started)
    seconds = last - started
    return Ceiling(
        pods=len(bound),
        seconds=seconds,
        pods_per_s=len(bound) / seconds if seconds > 0 else 0.0,
        simulator_cpu_s=simulator_cpu,
        generator_cpu_s=generator_cpu,
    )


async def _create_and_bind(
    session: aiohttp.ClientSession, scenario: Scenario, names: list[str], nodes: list[str]
) -> None:
    """Each client takes the next pod, creates it and binds it to the next node in turn, as a
    scheduler with nothing to decide would; the nodes hold every scenario's pods spread evenly."""
    pending = iter(enumerate(names))

    async def client() -> None:
        for index, name in pending:
            pod = workloads.single_pod(scenario, name)
            pod["spec"]["schedulerName"] = "ceiling"  # nobody else's to place
            created = await _post(session, f"/api/v1/namespaces/{NAMESPACE}/pods", pod)
            binding = {
                "apiVersion": "v1",
                "kind": "Binding",
                "metadata": {"name": name, "namespace": NAMESPACE, "uid": created["metadata"]["uid"]},
                "target": {"apiVersion": "v1", "kind": "Node", "name": nodes[index % len(nodes)]},
            }
            await _post(session, f"/api/v1/namespaces/{NAMESPACE}/pods/{name}/binding", binding)

    await asyncio.gather(*(client() for _ in range(scenario.clients)))


async def _post(session: aiohttp.ClientSession, path: str, body: dict[str, Any]) -> dict[str, Any]:
    for attempt in range(20):
        async with session.post(path, json=body) as response:
            if response.status in (200, 201):
                answer: dict[str, Any] = await response.json()
                return answer
            if response.status == 409 and body["kind"] == "Namespace":
                return {}
            if response.status < 500 and response.status != 429:
                raise RuntimeError(f"ceiling: {path} failed: {response.status} {await response.text()}")
        await asyncio.sleep(0.05 * (attempt + 1))  # a write limit answers 429: wait as clients do
    raise RuntimeError(f"ceiling: {path} kept failing")


async def _wait_ready(session: aiohttp.ClientSession) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            async with session.get("/version") as response:
                if response.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.1)
    raise RuntimeError(f"the ceiling's simulator was not ready within {READY_TIMEOUT_S:.0f} s")


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
