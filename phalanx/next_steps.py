"""What `phalanx up` tells the user once everything runs: where it is, and what to type next.

Every command it prints must work when pasted as printed, in the shell the user started from:
`phalanx` is named the way the user reached it (`.venv/bin/phalanx` from a checkout, `phalanx`
when it is on PATH), paths are relative to that shell's folder when they lie below it and absolute
otherwise, and `--state-dir` is spelled out when it is not the default. `scripts/up.sh` changes to
the checkout before it starts `phalanx up`, so it passes the folder it was started from in
PHALANX_CALLER_DIR. The README's quickstart shows the same commands; a test holds them together.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from phalanx.stack import Stack
from shared.infra.passwords import without_user

CALLER_DIR_ENV = "PHALANX_CALLER_DIR"
DEFAULT_STATE_DIR = Path(".phalanx")
EXAMPLE_JOB = Path(__file__).resolve().parents[1] / "examples" / "job.yaml"


def caller_dir() -> Path:
    """The folder of the shell that the user typed the command in (taken once: not for children)."""
    return Path(os.environ.pop(CALLER_DIR_ENV, "") or os.getcwd()).resolve()


def shown_path(path: Path, here: Path) -> str:
    path = path.resolve()
    return str(path.relative_to(here)) if path.is_relative_to(here) else str(path)


def phalanx_command(here: Path, argv0: str | None = None) -> str:
    """`phalanx` as the user can type it again from `here`."""
    invoked = Path(argv0 or sys.argv[0])
    on_path = shutil.which("phalanx")
    if on_path and invoked.exists() and Path(on_path).resolve() == invoked.resolve():
        return "phalanx"
    if not invoked.exists():
        return "phalanx"
    shown = shown_path(invoked, here)
    return shown if "/" in shown else f"./{shown}"


def ready_text(stack: Stack, state_dir: Path, *, detached: bool, here: Path) -> str:
    phalanx = phalanx_command(here)
    default = state_dir.resolve() == (here / DEFAULT_STATE_DIR).resolve()
    state = "" if default else f" --state-dir {shown_path(state_dir, here)}"
    apply = (
        f"kubectl apply -f {shown_path(EXAMPLE_JOB, here)}"
        if EXAMPLE_JOB.exists()
        else "kubectl apply -f YOUR-VOLCANO-JOB.yaml"
    )
    where = "" if detached else " (in another shell)"
    stop = f"Stop it with: {phalanx} down{state}" if detached else "Ctrl-C stops everything."
    users = shown_path(Path(stack.state_dir) / "nats-users.json", here)
    console = f"  console (web)        {stack.console_url}\n" if stack.console_url else ""
    # Where Prometheus scrapes each service (docs/observability.md).
    scraped = [p for p in stack.processes if p.name != "simulator" and p.health_port]
    metrics = "".join(
        f"  {'metrics' if i == 0 else '':<21}{p.name + ' ':<12}http://127.0.0.1:{p.health_port}/metrics\n"
        for i, p in enumerate(scraped)
    )
    return f"""
[bold green]Phalanx is running.[/bold green]
  cluster (simulated)  {stack.simulator_url}
  NATS                 {without_user(stack.nats_url)}   users: {users}
  PostgreSQL           {without_user(stack.database_url)}
{console}{metrics}  logs                 {shown_path(Path(stack.state_dir) / "logs", here)}

Submit a Volcano Job and watch it{where}:
  export KUBECONFIG={shown_path(Path(stack.kubeconfig), here)}
  {apply}
  kubectl get vcjob,podgroup,pods
  {phalanx} events watch{state}

{stop}"""
