"""Every port the compose file publishes can be moved by a variable, and a taken one is named.

The variables are documented beside the command (docs/deploy.md); scripts/compose.sh checks them
before `docker compose up` and names the variable of a port that is taken. A stand-in `docker`
on PATH records what the script would run, so no engine is needed.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.unit.deploy.rendering import REPO

pytestmark = pytest.mark.unit

PUBLISHED = re.compile(r"^127\.0\.0\.1:\$\{(?P<variable>PHALANX_[A-Z_]+_PORT):-(?P<default>\d+)\}:\d+$")


def published_ports() -> dict[str, tuple[str, str]]:
    """service -> (variable, default) for each port the compose file publishes."""
    services = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    found = {}
    for name, service in services.items():
        for port in service.get("ports", []):
            match = PUBLISHED.match(port)
            assert match, f"{name} publishes {port!r}: not on 127.0.0.1 from a PHALANX_*_PORT variable"
            found[name] = (match["variable"], match["default"])
    return found


def test_every_published_port_comes_from_a_variable_with_todays_default() -> None:
    assert published_ports() == {
        "nats": ("PHALANX_NATS_PORT", "4222"),
        "simulator": ("PHALANX_SIMULATOR_PORT", "8001"),
        "console": ("PHALANX_CONSOLE_PORT", "8088"),
    }


def test_each_variable_is_documented_and_checked_by_the_script() -> None:
    docs = (REPO / "docs" / "deploy.md").read_text()
    script = (REPO / "scripts" / "compose.sh").read_text()
    for variable, default in published_ports().values():
        assert f"| `{variable}` | {default} |" in docs, variable
        assert f"{variable}={default}" in script, variable


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def fake_docker(tmp_path: Path) -> Path:
    """A `docker` that records its arguments and, for `compose ps`, reports no running stack."""
    record = tmp_path / "docker-calls"
    docker = tmp_path / "bin" / "docker"
    docker.parent.mkdir()
    docker.write_text(f'#!/bin/sh\necho "$*" >> {record}\n')
    docker.chmod(0o755)
    return record


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def _compose_sh(fake_docker: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    path = f"{fake_docker.parent / 'bin'}:{os.environ['PATH']}"
    return subprocess.run(
        [str(REPO / "scripts" / "compose.sh"), *args],
        env={**os.environ, "PATH": path, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _free_ports() -> dict[str, str]:
    return {variable: str(_free_port()) for variable, _ in published_ports().values()}


def test_a_taken_port_is_named_by_its_variable_and_nothing_starts(fake_docker: Path, taken_port: int) -> None:
    ran = _compose_sh(fake_docker, {**_free_ports(), "PHALANX_NATS_PORT": str(taken_port)}, "up", "-d")
    assert ran.returncode == 1
    assert f"Port {taken_port} on 127.0.0.1 is taken; set PHALANX_NATS_PORT to a free port" in ran.stderr
    assert "PHALANX_SIMULATOR_PORT" not in ran.stderr
    assert "compose up" not in fake_docker.read_text()


def test_free_ports_go_through_to_docker_compose(fake_docker: Path) -> None:
    ran = _compose_sh(fake_docker, _free_ports(), "up", "--build", "--wait")
    assert ran.returncode == 0, ran.stderr
    assert fake_docker.read_text().splitlines()[-1] == "compose up --build --wait"


def test_other_commands_are_not_checked(fake_docker: Path, taken_port: int) -> None:
    ran = _compose_sh(fake_docker, {"PHALANX_NATS_PORT": str(taken_port)}, "down", "-v")
    assert ran.returncode == 0, ran.stderr
    assert fake_docker.read_text().splitlines() == ["compose down -v"]
