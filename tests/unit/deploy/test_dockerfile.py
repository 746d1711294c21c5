"""The Dockerfile builds one lean, non-root image that the compose file and the charts can run.

The container tier (tests/e2e/containers) builds and runs it on a Docker engine; here, without one,
the Dockerfile is read as a list of instructions (continuation lines joined) and checked for what
the other artifacts assume: the stages, the non-root uid the
charts declare, no dev dependencies, sources that exist and are not excluded by .dockerignore.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import subprocess
import sys

import pytest
import yaml

from tests.unit.deploy.health_server import health_server
from tests.unit.deploy.rendering import CHARTS, REPO, SERVICE_CHARTS

pytestmark = pytest.mark.unit

Instruction = tuple[str, str]


def instructions() -> list[Instruction]:
    text = (REPO / "Dockerfile").read_text()
    joined = re.sub(r"\\\n", " ", text)
    parsed = []
    for line in joined.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, _, rest = stripped.partition(" ")
            parsed.append((keyword.upper(), rest.strip()))
    return parsed


def stages() -> list[list[Instruction]]:
    found: list[list[Instruction]] = []
    for keyword, rest in instructions():
        if keyword == "FROM":
            found.append([])
        if found:
            found[-1].append((keyword, rest))
    return found


def final_stage() -> list[Instruction]:
    return stages()[-1]


def arguments(stage: list[Instruction], keyword: str) -> list[str]:
    return [rest for kw, rest in stage if kw == keyword]


def test_two_stages_on_python_311_slim() -> None:
    default_base = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", (REPO / "Dockerfile").read_text(), re.M)
    assert default_base is not None
    assert default_base.group(1) == "python:3.11-slim"
    froms = [stage[0][1] for stage in stages()]
    assert froms == ["${PYTHON_IMAGE} AS builder", "${PYTHON_IMAGE} AS runtime"]


def test_final_stage_takes_only_the_venv_from_the_builder() -> None:
    copies = arguments(final_stage(), "COPY")
    from_builder = [c for c in copies if c.startswith("--from=")]
    assert from_builder == ["--from=builder /opt/phalanx /opt/phalanx"]
    assert not [r for r in arguments(final_stage(), "RUN") if "pip install" in r]


def test_no_dev_dependencies_are_installed() -> None:
    for keyword, rest in instructions():
        if keyword == "RUN" and "pip install" in rest:
            assert "[dev]" not in rest
            assert "[local]" not in rest


def test_only_the_core_dependencies_are_installed() -> None:
    """The requirements are [project].dependencies: the `local` extra's servers stay out of the image."""
    runs = " ".join(rest for keyword, rest in instructions() if keyword == "RUN")
    assert "['project']['dependencies']" in runs
    assert "optional-dependencies" not in runs


def test_no_frontend_is_fetched_from_a_registry() -> None:
    """A `# syntax=` line makes BuildKit pull its frontend image; without one it builds offline."""
    first = (REPO / "Dockerfile").read_text().splitlines()[0]
    assert not re.match(r"#\s*syntax\s*=", first, re.I)


def test_runs_as_the_non_root_uid_the_charts_declare() -> None:
    [user] = arguments(final_stage(), "USER")
    uid = user.split(":")[0]
    assert uid.isdigit(), "numeric, so that runAsNonRoot can verify it"
    assert int(uid) != 0
    for chart in SERVICE_CHARTS:
        values = yaml.safe_load((CHARTS / chart / "values.yaml").read_text())
        assert values["podSecurityContext"]["runAsUser"] == int(uid), chart


def test_environment_is_unbuffered_and_uses_the_venv() -> None:
    env = " ".join(arguments(final_stage(), "ENV"))
    assert "PYTHONUNBUFFERED=1" in env
    assert 'PATH="/opt/phalanx/bin:${PATH}"' in env


def healthcheck_command() -> list[str]:
    [healthcheck] = arguments(final_stage(), "HEALTHCHECK")
    command: list[str] = json.loads(healthcheck.split(" CMD ", 1)[1])
    return command


def test_healthcheck_uses_python_not_curl() -> None:
    command = healthcheck_command()
    assert command[:2] == ["python", "-c"]
    assert "urllib.request" in command[2]


@pytest.mark.parametrize(("status", "healthy"), [(200, True), (500, False)], ids=["200", "500"])
def test_healthcheck_asks_healthz_on_the_configured_port(status: int, healthy: bool) -> None:
    with health_server(status) as port:
        result = subprocess.run(
            [sys.executable, "-c", healthcheck_command()[2]],
            env={**os.environ, "PHALANX_HEALTH_PORT": str(port)},
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    assert (result.returncode == 0) is healthy, result.stderr


def test_labels_follow_the_opencontainers_keys() -> None:
    labels = " ".join(arguments(final_stage(), "LABEL"))
    for key in ("title", "description", "version", "revision", "created"):
        assert f"org.opencontainers.image.{key}=" in labels


def _copy_sources() -> list[str]:
    sources = []
    for rest in arguments([i for stage in stages() for i in stage], "COPY"):
        words = [w for w in shlex.split(rest) if not w.startswith("--")]
        if not rest.startswith("--from="):
            sources += words[:-1]
    return sources


def _ignored(path: str) -> bool:
    patterns = [
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    return any(fnmatch.fnmatch(path, p) or path.startswith(p.rstrip("/") + "/") for p in patterns)


def test_every_copied_source_exists_and_is_in_the_build_context() -> None:
    sources = _copy_sources()
    assert {"pyproject.toml", "phalanx", "shared", "services", "alembic.ini", "migrations"} <= set(sources)
    for source in sources:
        assert (REPO / source).exists(), source
        assert not _ignored(source), f"{source} is excluded by .dockerignore"


@pytest.mark.parametrize("path", [".venv", ".git", ".phalanx", "tests", ".hypothesis", ".mypy_cache"])
def test_local_state_stays_out_of_the_build_context(path: str) -> None:
    assert _ignored(path)


def test_compose_migration_finds_alembic_where_the_image_puts_it() -> None:
    workdirs = arguments(final_stage(), "WORKDIR")
    assert workdirs == ["/app"]
    assert "alembic.ini ./" in arguments(final_stage(), "COPY")
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    command = compose["services"]["migrate"]["command"]
    assert command[command.index("-c") + 1] == "/app/alembic.ini"
