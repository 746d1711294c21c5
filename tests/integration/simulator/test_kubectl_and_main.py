"""`python -m services.simulator` as a user starts it, driven with kubectl and the seeds' manifests."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from kubernetes import client, config

from tests.waiting import eventually

pytestmark = pytest.mark.integration

REPOSITORY = Path(__file__).resolve().parents[3]
SEEDS = sorted((Path(__file__).parent / "seed_manifests").glob("*.yaml"))
KUBECTL = shutil.which("kubectl")


class Process:
    def __init__(self, process: subprocess.Popen[str], kubeconfig: Path) -> None:
        self.process, self.kubeconfig = process, kubeconfig


def start(tmp: Path, *arguments: str) -> Process:
    kubeconfig = tmp / "kubeconfig"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "services.simulator",
            "--port",
            "0",
            "--kubeconfig",
            str(kubeconfig),
            *arguments,
        ],
        cwd=REPOSITORY,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    announced = process.stdout.readline()
    assert announced.startswith("simulator: serving http://127.0.0.1:"), announced
    url = announced.split()[2].rstrip(",")

    def healthy() -> bool:
        try:
            return httpx.get(f"{url}/healthz").status_code == 200
        except httpx.TransportError:
            return False

    eventually(healthy, "the simulator answering /healthz", within=20, every=0.05)
    return Process(process, kubeconfig)


def stop(running: Process) -> int:
    running.process.send_signal(signal.SIGTERM)
    running.process.communicate(timeout=20)  # also closes the pipe of its announcement
    return running.process.returncode


@pytest.fixture(scope="module")
def default_simulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Process]:
    running = start(tmp_path_factory.mktemp("default"))
    yield running
    stop(running)


def kubectl(running: Process, *arguments: str) -> str:
    assert KUBECTL is not None
    result = subprocess.run(
        [KUBECTL, *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "KUBECONFIG": str(running.kubeconfig)},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_run_command_writes_a_kubeconfig_and_serves_the_default_nodes(
    default_simulator: Process,
) -> None:
    api = config.new_client_from_config(str(default_simulator.kubeconfig))
    nodes = client.CoreV1Api(api).list_node().items
    assert [n.metadata.name for n in nodes] == ["node-0", "node-1", "node-2", "node-3"]
    assert {n.status.allocatable["cpu"] for n in nodes} == {"8"}
    assert {n.status.allocatable["memory"] for n in nodes} == {"32Gi"}
    assert {n.status.allocatable["pods"] for n in nodes} == {"110"}
    api.close()


def test_a_nodes_file_sets_the_cluster_and_sigterm_stops_it(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text(
        "- {namePrefix: gpu-, count: 2, cpu: '16', memory: 64Gi, gpu: 2}\n"
        "- {name: edge, cpu: '2', memory: 4Gi, labels: {zone: edge},"
        " taints: [{key: edge, effect: NoSchedule}]}\n"
    )
    running = start(tmp_path, "--nodes", str(nodes))
    try:
        api = config.new_client_from_config(str(running.kubeconfig))
        listed = client.CoreV1Api(api).list_node().items
        assert [n.metadata.name for n in listed] == ["gpu-0", "gpu-1", "edge"]
        assert listed[0].status.capacity["nvidia.com/gpu"] == "2"
        assert listed[2].spec.taints[0].key == "edge"
        api.close()
    finally:
        assert stop(running) == 0


def test_a_bad_nodes_file_fails_at_start(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.yaml"
    nodes.write_text("- {name: x, cpus: '4'}\n")
    result = subprocess.run(
        [sys.executable, "-m", "services.simulator", "--port", "0", "--nodes", str(nodes)],
        cwd=REPOSITORY,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "unknown node field" in result.stdout + result.stderr


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (Debian: kubernetes-client)")
def test_kubectl_applies_gets_and_describes_the_seeds(default_simulator: Process) -> None:
    kubectl(default_simulator, "create", "namespace", "test")
    for seed in SEEDS:
        applied = kubectl(default_simulator, "apply", "-f", str(seed))
        assert "created" in applied or "configured" in applied or "unchanged" in applied
    jobs = kubectl(default_simulator, "get", "vcjob", "-A")
    for name in ("tensorflow-dist-mnist", "STATUS"):
        assert name in jobs
    assert "ray-test-cluster-0-pg" in kubectl(default_simulator, "get", "pg", "-n", "test")
    pods = kubectl(default_simulator, "get", "pods", "-n", "test", "-o", "wide")
    assert "test-cluster-1-worker-1" in pods
    assert "Pending" in pods
    described = kubectl(default_simulator, "describe", "vcjob", "tensorflow-dist-mnist")
    assert "Min Available:  3" in described
    described_pod = kubectl(default_simulator, "describe", "pod", "-n", "test", "test-cluster-0-head")
    assert "scheduling.k8s.io/group-name: ray-test-cluster-0-pg" in described_pod
    assert "Node-Selectors" in described_pod
    assert "node-0" in kubectl(default_simulator, "describe", "node", "node-0")
    reapplied = kubectl(default_simulator, "apply", "-f", str(SEEDS[3]))
    assert "unchanged" in reapplied
    kubectl(default_simulator, "label", "vcjob", "tensorflow-dist-mnist", "team=ml")
    assert "team=ml" in kubectl(default_simulator, "get", "vcjob", "--show-labels")
    deleted = kubectl(default_simulator, "delete", "-f", str(SEEDS[3]))
    assert 'job.batch.volcano.sh "tensorflow-dist-mnist" deleted' in deleted


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (Debian: kubernetes-client)")
def test_kubectl_runs_a_plain_pod_and_cordons_a_node(default_simulator: Process) -> None:
    kubectl(default_simulator, "run", "hello", "--image=busybox", "--restart=Never")

    def running() -> bool:
        return "Running" in kubectl(default_simulator, "get", "pod", "hello")

    eventually(running, "pod hello Running", every=0.05)
    kubectl(default_simulator, "cordon", "node-3")
    assert "SchedulingDisabled" in kubectl(default_simulator, "get", "node", "node-3")
    kubectl(default_simulator, "uncordon", "node-3")
    kubectl(default_simulator, "delete", "pod", "hello")
