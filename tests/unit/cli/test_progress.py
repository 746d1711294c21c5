"""The long commands' progress: rich's display on a terminal, plain lines in a pipe or a log."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from phalanx import progress

pytestmark = pytest.mark.unit


def _run(console: Console) -> None:
    with progress.shown(console) as steps:
        steps.step("NATS")
        steps.say("a line [not markup]")
        steps.step("the services", total=4)
        steps.count(4)


def test_in_a_pipe_each_step_is_one_line_with_its_duration() -> None:
    out = io.StringIO()
    _run(Console(file=out, force_terminal=False, width=100))
    lines = out.getvalue().splitlines()
    assert lines[0] == "a line [not markup]"
    assert lines[1].startswith("  NATS: ")
    assert lines[1].endswith(" s")
    assert lines[2].startswith("  the services: ")
    assert len(lines) == 3


def test_on_a_terminal_finished_steps_are_ticked_and_counts_shown() -> None:
    out = io.StringIO()
    _run(Console(file=out, force_terminal=True, width=100, color_system=None))
    final = out.getvalue().rsplit("\x1b[?25l", 1)[-1]  # the last frame drawn
    assert "a line [not markup]" in out.getvalue()
    assert "✓ NATS" in final
    assert "✓ the services" in final
    assert "4/4" in final
