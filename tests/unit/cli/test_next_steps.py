"""What `phalanx up` prints works when pasted, from where the user stands, and `--help` shows flags
as flags."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from phalanx import next_steps
from phalanx.cli import app
from phalanx.stack import Process, Stack

pytestmark = pytest.mark.unit
CHECKOUT = Path(next_steps.__file__).resolve().parents[1]


def _stack(state_dir: Path) -> Stack:
    return Stack(
        str(state_dir),
        "nats://127.0.0.1:4222",
        "postgresql+asyncpg://postgres@127.0.0.1:5432/phalanx",
        str(state_dir / "kubeconfig"),
        "http://127.0.0.1:8001",
    )


def _commands(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.startswith("  ") and "://" not in line]


def test_from_the_checkout_the_commands_are_the_readmes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CHECKOUT)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # the venv not activated, as the README has it
    monkeypatch.setattr("sys.argv", [".venv/bin/phalanx", "up", "--detach"])
    stack = _stack(CHECKOUT / ".phalanx")
    text = next_steps.ready_text(stack, Path(".phalanx"), detached=True, here=CHECKOUT)
    assert _commands(text) == [
        "logs                 .phalanx/logs",
        "export KUBECONFIG=.phalanx/kubeconfig",
        "kubectl apply -f examples/job.yaml",
        "kubectl get vcjob,podgroup,pods",
        ".venv/bin/phalanx events watch",
    ]
    assert text.rstrip().endswith("Stop it with: .venv/bin/phalanx down")


def test_from_another_folder_paths_and_the_state_dir_are_spelled_out(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(CHECKOUT)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setattr("sys.argv", [".venv/bin/phalanx", "up"])
    state = tmp_path / "state"
    text = next_steps.ready_text(_stack(state), state, detached=False, here=tmp_path)
    commands = _commands(text)
    assert "export KUBECONFIG=state/kubeconfig" in commands
    assert f"kubectl apply -f {CHECKOUT / 'examples' / 'job.yaml'}" in commands
    assert f"{CHECKOUT / '.venv' / 'bin' / 'phalanx'} events watch --state-dir state" in commands
    assert "Submit a Volcano Job and watch it (in another shell):" in text
    assert text.rstrip().endswith("Ctrl-C stops everything.")


def test_phalanx_on_path_is_named_plainly(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    script = tmp_path / "bin" / "phalanx"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ['PATH']}")
    assert next_steps.phalanx_command(tmp_path, str(script)) == "phalanx"
    elsewhere = CHECKOUT / "README.md"  # any file that is not the `phalanx` on PATH
    assert next_steps.phalanx_command(tmp_path / "bin", str(elsewhere)) == str(elsewhere)


def test_the_callers_folder_is_taken_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(next_steps.CALLER_DIR_ENV, str(tmp_path))
    assert next_steps.caller_dir() == tmp_path.resolve()
    assert next_steps.CALLER_DIR_ENV not in os.environ, "the services must not inherit it"


@pytest.mark.parametrize("command", [["up"], ["events", "watch"], ["bench"], ["infra", "up"]])
def test_help_shows_flags_without_a_value_placeholder(command: list[str]) -> None:
    shown = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "120"})
    assert shown.exit_code == 0, shown.output
    assert "--help" in shown.output
    assert "<bool>" not in shown.output


def test_up_says_where_each_service_serves_its_metrics(tmp_path: Path) -> None:
    stack = _stack(tmp_path)
    stack.processes = [
        Process("simulator", 1, "sim.log", 0, {}),
        Process("scheduler", 2, "scheduler.log", 41001, {}),
        Process("controller", 3, "controller.log", 41002, {}),
    ]
    text = next_steps.ready_text(stack, tmp_path, detached=True, here=tmp_path)
    lines = [line.split() for line in text.splitlines() if line.strip().endswith("/metrics")]
    assert lines == [
        ["metrics", "scheduler", "http://127.0.0.1:41001/metrics"],
        ["controller", "http://127.0.0.1:41002/metrics"],
    ]
