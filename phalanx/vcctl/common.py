"""Shell: the options every vcctl command takes, and how a command reports a failure.

vcctl's flags are kept with their short forms (-k kubeconfig, -s master, -n namespace for jobs,
-N name for jobs, -n name for queues); a name may also be given as an argument, kubectl-style.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer

from phalanx.vcctl import kube, output

P = ParamSpec("P")
R = TypeVar("R")

KUBECONFIG = typer.Option(
    None,
    "--kubeconfig",
    "-k",
    help="Path to the kubeconfig file (default: $KUBECONFIG, ~/.kube/config, else ./.phalanx/kubeconfig).",
)
MASTER = typer.Option(
    None, "--master", "-s", help="The address of the API server (overrides the kubeconfig)."
)
NAMESPACE = typer.Option("default", "--namespace", "-n", help="The namespace of the job.")


def _complete_format(incomplete: str) -> list[str]:
    return [f for f in output.FORMATS if f.startswith(incomplete)]


OUTPUT = typer.Option(
    None, "--output", "-o", help="json, yaml or wide.", autocompletion=_complete_format, show_default=False
)


def check_format(fmt: str | None) -> None:
    if fmt is not None and fmt not in output.FORMATS:
        raise kube.CliError(
            f"--output: unknown format {fmt!r}; use one of {', '.join(output.FORMATS)}", kube.EXIT_USAGE
        )


def pick_name(flag: str | None, argument: str | None, what: str, flag_names: str) -> str:
    """The object's name from its flag (vcctl) or argument (kubectl); vcctl's message if neither."""
    if flag and argument and flag != argument:
        raise kube.CliError(f"two names given ({flag!r} and {argument!r}); pass one", kube.EXIT_USAGE)
    name = flag or argument
    if not name:
        raise kube.CliError(f"{what} (specified by {flag_names} or as an argument)", kube.EXIT_USAGE)
    return name


def fails_cleanly(command: Callable[P, R]) -> Callable[P, R]:
    """Print a CliError as `Error: ...` on stderr and exit with its code (see kube's docstring)."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except kube.CliError as error:
            print(f"Error: {error.message}", file=sys.stderr)
            raise typer.Exit(error.code) from None

    return run


def say(message: str) -> None:
    """Progress for people, on stderr, so stdout stays what vcctl prints."""
    print(message, file=sys.stderr)
