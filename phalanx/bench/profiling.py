"""py-spy on each of the stack's services while a benchmark measures (`phalanx bench --profile`).

Started by runner.py when the measured load begins and interrupted when it ends, so the profiles
hold only the load; py-spy writes a raw (collapsed-stack) file per service.
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
