"""The README's quickstart, run as it is written, in a fresh clone, by a user with a clean shell.

The `sh` blocks of README.md's "Run it" section are read from the clone (never copied here) and
run in order in a folder other users cannot enter (as `mktemp -d` makes them; CI runs as root), with
only the machine's own environment: set-up, start, the example job and its audit events, stop.
What the README promises is asserted: the job completes, its events appear and say what changed,
`phalanx up` prints the README's commands and no warning, and `down` leaves nothing running.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from shared.infra import local

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(1200),
    pytest.mark.skipif(shutil.which("git") is None, reason="git is needed to clone the checkout"),
    pytest.mark.skipif(
        shutil.which("kubectl") is None, reason="kubectl (Debian: kubernetes-client) not installed"
    ),
]
CHECKOUT = Path(__file__).resolve().parents[2]
SECTION = "## Run it"
# What a user's shell has from the machine (and where set-up keeps its wheels); everything the
# project or this test run set is left out.
MACHINE_ENV = re.compile(
    r"^(PATH|HOME|USER|LOGNAME|SHELL|LANG|LC_\w+|TZ|TMPDIR|XDG_CACHE_HOME|PIP_\w+|PYENV\w*|PHALANX_WHEELS)$"
)
SETUP_S = 900  # a first set-up on a busy two-core machine
JOB_S = 240


def quickstart_blocks(readme: str) -> list[str]:
    """The `sh` code blocks between the "Run it" heading and the next heading of that level."""
    section = readme.split(f"\n{SECTION}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```sh\n(.*?)^```", section, flags=re.MULTILINE | re.DOTALL)


def commands(block: str) -> list[str]:
    """A block's commands without their comments."""
    return [line.split("  #", 1)[0].strip() for line in block.splitlines() if line.strip()]


@dataclass
class Clone:
    path: Path
    leftovers: list[Path] = field(default_factory=list)  # outside the clone: PostgreSQL's data


@pytest.fixture
def clone() -> Iterator[Clone]:
    if not (CHECKOUT / ".git").exists():
        pytest.skip("the checkout is not a git repository")
    parent = Path(tempfile.mkdtemp(prefix="phalanx-quickstart-"))  # mode 700
    made = Clone(parent / "phalanx")
    subprocess.run(["git", "clone", "--quiet", str(CHECKOUT), str(made.path)], check=True, timeout=120)
    try:
        yield made
    finally:
        with contextlib.suppress(Exception):  # whatever a failed run left running
            subprocess.run([str(made.path / ".venv/bin/phalanx"), "down"], cwd=made.path, timeout=120)
        for path in [parent, *made.leftovers]:
            shutil.rmtree(path, ignore_errors=True)


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if MACHINE_ENV.match(k)}
    # Not the interpreter of this test run (a venv's bin on PATH would hide a missing set-up step).
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and not (Path(p) / "activate").exists()]
    env["PATH"] = os.pathsep.join(path)
    return env


def run_block(block: str, cwd: Path, timeout: float) -> str:
    done = subprocess.run(
        ["bash", "-e", "-c", block],
        cwd=cwd,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{block!r} failed ({done.returncode}):\n{output}"
    return output


def run_until(block: str, cwd: Path, done: re.Pattern[str], timeout: float) -> str:
    """Run a block that ends in a command that follows forever; Ctrl-C it once `done` shows."""
    process = subprocess.Popen(
        ["bash", "-e", "-c", block],
        cwd=cwd,
        env=clean_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(process.stdout or []), daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None and not done.search("".join(output)):
        time.sleep(0.5)
    exited_early = process.poll()
    os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    process.wait(timeout=30)
    reader.join(timeout=10)
    if process.stdout is not None and not reader.is_alive():  # a live reader still holds it
        process.stdout.close()
    text = "".join(output)
    assert exited_early is None, f"the block stopped by itself ({exited_early}):\n{text}"
    assert done.search(text), f"no {done.pattern!r} within {timeout:.0f} s:\n{text}"
    return text


def started_processes(state_dir: Path) -> dict[str, tuple[int, int]]:
    """Every process `phalanx up` recorded, with a port it listens on (0: none recorded)."""
    stack = json.loads((state_dir / "stack.json").read_text())
    found = {p["name"]: (p["pid"], p["health_port"]) for p in stack["processes"]}
    found["simulator"] = (found["simulator"][0], int(stack["simulator_url"].rsplit(":", 1)[1]))
    found |= {s["name"]: (s["pid"], s["port"]) for s in json.loads((state_dir / "infra.json").read_text())}
    return found


def listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


def test_the_readme_quickstart_works_as_written(clone: Clone) -> None:
    blocks = quickstart_blocks((clone.path / "README.md").read_text())
    assert len(blocks) == 3, f"expected set-up, the example job, and stop; found {blocks}"
    start, example, stop = blocks
    assert any(line.startswith("scripts/up.sh") for line in commands(start)), start

    started = run_block(start, clone.path, SETUP_S)
    assert "Phalanx is running." in started, started
    assert "warning" not in started.lower(), f"a warning on a normal start:\n{started}"
    assert "pip's output: .venv/setup.log" in started
    # Everything `phalanx up` tells the user to type is what the README says.
    printed = started.split("Submit a Volcano Job and watch it:", 1)[1].splitlines()
    suggested = [line.strip() for line in printed if line.startswith("  ")]
    suggested.append(started.split("Stop it with: ", 1)[1].splitlines()[0].strip())
    documented = [command for block in blocks for command in commands(block)]
    assert set(suggested) <= set(documented), f"printed {suggested}, README has {documented}"
    state_dir = clone.path / ".phalanx"
    clone.leftovers += [Path(s["data_dir"]) for s in json.loads((state_dir / "infra.json").read_text())]
    running = started_processes(state_dir)
    # The simulator, the four services, the console, NATS and PostgreSQL.
    assert len(running) == 8, running

    watched = run_until(
        example, clone.path, re.compile(r"Job default/hello-gang +Running → Completed"), timeout=JOB_S
    )
    assert "job.batch.volcano.sh/hello-gang created" in watched
    for expected in (
        r"admission\.admitted +Job default/hello-gang +allowed",
        r"controller\.phase-changed +Job default/hello-gang +\(new\) → Pending",
        r"scheduler\.placed +PodGroup default/hello-gang-\S+ +3 pods on node-",
        r"controller\.bound +PodGroup default/hello-gang-\S+ +3 pods on node-",
        r"controller\.phase-changed +Job default/hello-gang +Pending → Running",
    ):
        assert re.search(expected, watched), f"no {expected!r} in:\n{watched}"
    assert "warning" not in watched.lower(), watched

    stopped = run_block(stop, clone.path, 120)
    assert "stopped: " in stopped, stopped
    for name, (pid, port) in running.items():
        assert not local.is_alive(pid), f"{name} (pid {pid}) still runs after down"
        assert not port or not listening(port), f"something still listens on {name}'s port {port}"
