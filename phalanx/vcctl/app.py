"""The `vcctl` entry point, and `register` which adds the same commands to `phalanx`.

vcctl job run|list|view|suspend|resume|delete|why     phalanx job ...
vcctl queue create|list|get|operate|delete|why        phalanx queue ...
vcctl version                                         phalanx version
"""

from __future__ import annotations

import os
import platform
from importlib import metadata

import typer

from phalanx.vcctl import why  # noqa: F401  (adds `job why` and `queue why`)
from phalanx.vcctl.jobs import jobs
from phalanx.vcctl.queues import queues

API_VERSION = "v1alpha1"


def version() -> None:
    """Print the version of the client and of the API it speaks."""
    try:
        release = metadata.version("phalanx")
    except metadata.PackageNotFoundError:
        release = "unknown"
    print(f"API Version: {API_VERSION}")
    print(f"Version: {release}")
    print(f"Python Version: {platform.python_version()}")
    print(f"OS/Arch: {platform.system().lower()}/{platform.machine()}")


def register(app: typer.Typer) -> None:
    app.add_typer(jobs, name="job", no_args_is_help=True)
    app.add_typer(queues, name="queue", no_args_is_help=True)
    app.command("version")(version)


vcctl = typer.Typer(
    help="vcctl for Phalanx: Volcano's command line, against any kubeconfig.", no_args_is_help=True
)
register(vcctl)


def main() -> None:
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    vcctl(prog_name="vcctl")


if __name__ == "__main__":
    main()
