"""Progress of the long commands (`phalanx up`, `bench`, `scenario run`) as the user watches it.

A command moves through steps ("NATS", "PostgreSQL", "the watcher", ...) and some steps count
towards a total ("pods bound", "scenarios"). On a terminal that is rich's progress display: one line
per step, a spinner while it runs, a tick and its duration once done, a bar where there is a total.
Elsewhere (a pipe, a log, CI) it is plain lines, one per step and a count now and then, so that logs
stay readable. The code doing the work only calls `step`, `count`, `say` and `done`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from rich.console import Console, RenderableType
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

PLAIN_COUNT_EVERY_S = 5.0


class Steps(Protocol):
    def step(self, description: str, total: int | None = None) -> None:
        """A new step begins; the one before it is done."""

    def count(self, done: int, total: int | None = None) -> None:
        """How far the current step is (of `total`, when known)."""

    def say(self, line: str) -> None:
        """A line for the user, printed above the progress display."""

    def done(self) -> None:
        """The current step is done, and no other begins yet."""


class Silent:
    """Steps that show nothing: for callers that report in their own way (tests, libraries)."""

    def step(self, description: str, total: int | None = None) -> None:
        return None

    def count(self, done: int, total: int | None = None) -> None:
        return None

    def say(self, line: str) -> None:
        return None

    def done(self) -> None:
        return None


class _Plain:
    def __init__(self, console: Console) -> None:
        self._console = console
        self._current: tuple[str, float] | None = None
        self._total: int | None = None
        self._last_count = 0.0

    def step(self, description: str, total: int | None = None) -> None:
        self.done()
        self._current = (description, time.monotonic())
        self._total = total
        self._last_count = time.monotonic()

    def count(self, done: int, total: int | None = None) -> None:
        self._total = total if total is not None else self._total
        now = time.monotonic()
        if self._current and now - self._last_count >= PLAIN_COUNT_EVERY_S:
            self._last_count = now
            of = f" of {self._total}" if self._total is not None else ""
            self._console.print(f"  {self._current[0]}: {done}{of}", highlight=False)

    def say(self, line: str) -> None:
        self._console.print(line, markup=False, highlight=False)

    def done(self) -> None:
        if self._current:
            description, began = self._current
            self._console.print(f"  {description}: {time.monotonic() - began:.1f} s", highlight=False)
            self._current = None


class _OnlyWhenCounting(ProgressColumn):
    """A bar or an "n/total" only on the steps that count; the others show their name alone."""

    def __init__(self, column: ProgressColumn) -> None:
        super().__init__()
        self._column = column

    def render(self, task: Task) -> RenderableType:
        return self._column.render(task) if task.fields.get("counting") else Text("")


class _Rich:
    def __init__(self, progress: Progress) -> None:
        self._progress = progress
        self._task: TaskID | None = None

    def step(self, description: str, total: int | None = None) -> None:
        self.done()
        self._task = self._progress.add_task(description, total=total, counting=total is not None)

    def count(self, done: int, total: int | None = None) -> None:
        if self._task is not None:
            known = total if total is not None else self._progress.tasks[self._task].total
            self._progress.update(self._task, completed=done, total=known, counting=True)

    def say(self, line: str) -> None:
        self._progress.console.print(line, markup=False, highlight=False)

    def done(self) -> None:
        if self._task is not None:
            task = self._progress.tasks[self._task]
            # A finished step shows a tick instead of its spinner (a count shows how far it got).
            if not task.fields.get("counting"):
                self._progress.update(self._task, total=1, completed=1)
            self._progress.stop_task(self._task)
            self._task = None


@contextmanager
def shown(console: Console) -> Iterator[Steps]:
    """The progress display for `console`: rich's on a terminal, plain lines elsewhere."""
    if not console.is_terminal:
        plain = _Plain(console)
        try:
            yield plain
        finally:
            plain.done()
        return
    display = Progress(
        SpinnerColumn(finished_text="[green]✓[/green]"),
        TextColumn("{task.description}"),
        _OnlyWhenCounting(BarColumn(bar_width=24)),
        _OnlyWhenCounting(MofNCompleteColumn()),
        TimeElapsedColumn(),
        console=console,
    )
    steps = _Rich(display)
    with display:
        try:
            yield steps
        finally:
            steps.done()
