"""`python -m services.simulator --port PORT --kubeconfig FILE [--nodes FILE] ...`.

Parses the flags into `SimulatorSettings` (flags win over `SIMULATOR_*` variables), writes the
kubeconfig and serves until SIGINT or SIGTERM. `main(argv)` is what `phalanx simulator` calls.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from pathlib import Path
from typing import Any

from services.simulator.app import run
from services.simulator.kubelets.nodes import NodeFileError
from services.simulator.settings import SimulatorSettings


def parse_args(argv: list[str] | None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="phalanx simulator", description=__doc__.splitlines()[0])
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, help="port to listen on (default 8080; 0: any free)")
    parser.add_argument("--kubeconfig", type=Path, help="write a kubeconfig for the simulator here")
    parser.add_argument(
        "--nodes",
        dest="nodes_file",
        type=Path,
        help="YAML list of nodes; default node-0..3 (8 CPU, 32Gi, 110 pods)",
    )
    parser.add_argument("--qps", type=float, help="write rate limit (requests per second)")
    parser.add_argument("--burst", type=int, help="writes allowed at once above the limit")
    parser.add_argument("--kubelet-start-delay", type=float, help="seconds from bound to Running")
    parser.add_argument(
        "--no-default-scheduler",
        dest="default_scheduler",
        action="store_const",
        const=False,
        help="leave default-scheduler pods Pending",
    )
    parser.add_argument("--history-size", type=int, help="watch events kept per resource type")
    parser.add_argument("--log-level", help="uvicorn log level (default warning)")
    return {k: v for k, v in vars(parser.parse_args(argv)).items() if v is not None}


def main(argv: list[str] | None = None) -> int:
    try:
        settings = SimulatorSettings(**parse_args(argv))
    except ValueError as error:
        print(f"invalid settings: {error}", file=sys.stderr)
        return 2
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # uvloop is optional: asyncio's own loop works, only slower
        pass
    try:
        written = f", kubeconfig {settings.kubeconfig}" if settings.kubeconfig else ""

        def announce(url: str) -> None:
            print(f"simulator: serving {url}{written}", flush=True)

        # uvicorn shuts down gracefully on SIGTERM, then re-raises the signal to the handler
        # that was installed before it: make that one a clean exit rather than death by signal.
        signal.signal(signal.SIGTERM, _stop)
        asyncio.run(run(settings, announce))
    except (NodeFileError, OSError) as error:
        print(f"simulator: {error}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, _StoppedError):
        pass
    return 0


class _StoppedError(Exception):
    """Raised by the SIGTERM handler once the server has shut down."""


def _stop(_signal: int, _frame: object) -> None:
    raise _StoppedError


if __name__ == "__main__":
    sys.exit(main())
