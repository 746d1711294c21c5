"""py-spy on each of the stack's services while a benchmark measures (`phalanx bench --profile`).

Started by runner.py when the measured load begins and interrupted when it ends, so the profiles
hold only the load; py-spy writes a raw (collapsed-stack) file per service, and `hot_spots` sums
each into the functions of ours the CPU went to, for the results file (report.py).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from phalanx import stack as stacks


def start(stack: stacks.Stack, directory: Path | None) -> list[subprocess.Popen[bytes]]:
    """py-spy on each of our processes, sampling only while the load is measured."""
    if directory is None:
        return []
    directory.mkdir(parents=True, exist_ok=True)
    # py-spy comes with the dev extras, so look beside this interpreter when it is not on PATH.
    beside = Path(sys.executable).parent / "py-spy"
    py_spy = shutil.which("py-spy") or (str(beside) if beside.exists() else "py-spy")
    return [
        subprocess.Popen(
            [
                py_spy,
                "record",
                "--pid",
                str(process.pid),
                "--rate",
                "100",
                "--format",
                "raw",
                "--nonblocking",
                "--output",
                str(directory / f"{process.name}.txt"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for process in stack.processes
    ]


def stop(profilers: list[subprocess.Popen[bytes]], say: Callable[[str], object]) -> None:
    for profiler in profilers:
        profiler.send_signal(signal.SIGINT)  # py-spy writes its file when interrupted
    for profiler in profilers:
        try:
            profiler.wait(timeout=30)
        except subprocess.TimeoutExpired:
            profiler.kill()
            say(f"py-spy (pid {profiler.pid}) did not stop; its profile may be missing")


# Our code, as py-spy names its files (relative to the checkout): a sample is charged to the
# deepest of these frames on its stack, so time in a library counts for the call that asked.
OUR_CODE = ("services/", "shared/", "phalanx/")
OUTSIDE = "(the event loop itself, and libraries with no frame of ours)"


def hot_spots(collapsed: str, *, top: int = 8) -> list[tuple[str, float]]:
    """The functions of ours that the samples of one profile (py-spy's raw, collapsed stacks)
    were spent in or under, deepest first, as (`function (file)`, share of all samples)."""
    charged: dict[str, int] = {}
    total = 0
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        samples = int(count)
        total += samples
        ours = [frame for frame in _task_frames(stack.split(";")) if _file_of(frame).startswith(OUR_CODE)]
        where = _without_line(ours[-1]) if ours else OUTSIDE
        charged[where] = charged.get(where, 0) + samples
    if not total:
        return []
    ranked = sorted(charged.items(), key=lambda item: -item[1])[:top]
    return [(where, samples / total) for where, samples in ranked]


def _task_frames(frames: list[str]) -> list[str]:
    """The frames of the callback or task the event loop was running (py-spy shows them right
    under `Runner.run`); none while the loop polled or scheduled. The service's entry point sits
    above the loop on every stack and is not where the CPU went."""
    for index, frame in enumerate(frames):
        if frame.startswith("Runner.run (asyncio/runners.py"):
            return frames[index + 1 :]
    return frames


def _file_of(frame: str) -> str:
    opened = frame.rfind(" (")
    return frame[opened + 2 :] if opened >= 0 else ""


def _without_line(frame: str) -> str:
    """`f (a/b.py:12)` → `f (a/b.py)`: one row per function, whichever line was running."""
    head, colon, tail = frame.rpartition(":")
    return f"{head})" if colon and tail.rstrip(")").isdigit() else frame


def read_hot_spots(directory: Path | None, *, top: int = 8) -> dict[str, list[tuple[str, float]]]:
    """Each service's hot spots from the profiles `start` wrote (nothing without profiles)."""
    if directory is None:
        return {}
    return {
        path.stem: spots
        for path in sorted(directory.glob("*.txt"))
        if (spots := hot_spots(path.read_text(errors="replace"), top=top))
    }
