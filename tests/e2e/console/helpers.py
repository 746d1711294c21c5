"""Test helpers for the console's end-to-end tests: submit Volcano Jobs and wait on what the pages say."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx

from phalanx import stack as stacks
from tests.e2e.conftest import kubectl
from tests.waiting import eventually

JOB = (Path(__file__).parents[3] / "examples" / "job.yaml").read_text()


def submit(stack: stacks.Stack, name: str, *, cpu: str = "1", run_seconds: int = 10) -> None:
    """The example gang of three under another name, asking `cpu` per pod."""
    manifest = (
        JOB.replace("hello-gang", name)
        .replace('cpu: "1"', f'cpu: "{cpu}"')
        .replace('run-seconds: "10"', f'run-seconds: "{run_seconds}"')
    )
    result = kubectl(stack, "apply", "-f", "-", stdin=manifest)
    assert result.returncode == 0, result.stderr


def page(stack: stacks.Stack, path: str) -> str:
    response = httpx.get(f"{stack.console_url}{path}", timeout=10)
    assert response.status_code == 200, response.text
    return response.text


def wait_for_page(
    stack: stacks.Stack, path: str, shows: Callable[[str], bool], *, timeout: float = 60
) -> str:
    """The page's HTML once `shows` holds for it. A 404 is waited out too: the console learns of a
    job from the audit stream, a moment after the job exists."""

    def shown() -> str | None:
        response = httpx.get(f"{stack.console_url}{path}", timeout=10)
        if response.status_code == 404:
            return None
        assert response.status_code == 200, response.text
        return response.text if shows(response.text) else None

    return eventually(shown, f"{path} to show what was expected", within=timeout, every=0.3)
