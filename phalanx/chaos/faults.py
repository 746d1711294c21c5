"""Carrying out one fault on a running stack, the way an operator's worst day would.

- `kill:<service>`: SIGKILL the service's process group, start it again with the same settings and
  wait until it answers /readyz (phalanx.stack.restart, as tests/e2e/test_restarts.py does).
- `pause:<part>`: SIGSTOP a service's or server's process group for longer than the scheduler's
  leadership lease, then SIGCONT. A paused scheduler wakes up believing it still leads, the case
  fencing exists for; a paused controller, watcher or admission is a process that hangs without
  dying (its connections stay open, nothing answers); a paused NATS or PostgreSQL is a server
  that accepts nothing while every client's connection stays up (a half-open link).
- `stop:<process or server>`: SIGKILL one replica of a scaled service (`admission-2`) or one
  member of a NATS cluster (`nats-2`; `nats-leader` is whichever leads the CLUSTER stream, which
  every watcher event passes through) and leave it dead: the rest must carry on without it.
- `restart:nats`, `restart:postgres`: stop the local server `phalanx up` started and start it again
  on the same port and data, so every client sees its connections drop and must reconnect.

Servers the stack did not start itself (PHALANX_NATS_URL / PHALANX_DATABASE_URL) are left alone,
and the fault reports it was skipped rather than pretend it happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from pathlib import Path

import nats

from phalanx import stack as stacks
from shared.infra import local
from shared.messages import subjects

PAUSE_BEYOND_LEASE_SECONDS = 5.0
SERVERS = ("nats", "postgres")


def inject(stack: stacks.Stack, kind: str, *, lease_seconds: float, durable_postgres: bool = False) -> str:
    """Carry out `kind` (one of plan.FAULT_KINDS); returns what was done, for the run's log."""
    action, _, target = kind.partition(":")
    if action == "kill":
        stacks.restart(stack, target)
        return f"SIGKILLed and restarted {target}"
    if action == "pause":
        pid = _server_pid(Path(stack.state_dir), target) if target in SERVERS else stack.process(target).pid
        if pid is None:
            return f"skipped pausing {target}: the stack did not start it"
        paused = pause(pid, lease_seconds + PAUSE_BEYOND_LEASE_SECONDS)
        return f"SIGSTOPped {target} for {paused:.1f} s (lease {lease_seconds:.0f} s), then SIGCONT"
    if action == "restart":
        return restart_server(Path(stack.state_dir), target, durable_postgres=durable_postgres)
    if action == "stop":
        return stop(stack, target)
    raise ValueError(f"unknown fault kind {kind!r}")


def stop(stack: stacks.Stack, target: str) -> str:
    """SIGKILL a process of the stack or a server it started, for good."""
    if target == "nats-leader":
        target = asyncio.run(_stream_leader(stack.nats_url, subjects.CLUSTER_STREAM))
    if any(process.name == target for process in stack.processes):
        stacks.stop_process(stack.process(target), sig=signal.SIGKILL)
        return f"SIGKILLed {target}, left stopped"
    server = next((s for s in local.load(Path(stack.state_dir)) if s.name == target), None)
    if server is None or server.name.partition("-")[0] not in stack_infra(Path(stack.state_dir)):
        return f"skipped stopping {target}: the stack did not start it"
    with contextlib.suppress(ProcessLookupError):
        os.kill(server.pid, signal.SIGKILL)
    return f"SIGKILLed {target} (pid {server.pid}), left stopped"


async def _stream_leader(nats_url: str, stream: str) -> str:
    client = await nats.connect(nats_url.split(","), connect_timeout=5)
    try:
        info = await client.jetstream(timeout=5).stream_info(stream)
    finally:
        await client.close()
    if info.cluster is None or not info.cluster.leader:
        raise RuntimeError(f"the stream {stream} has no cluster leader: NATS is not a cluster")
    return info.cluster.leader


def pause(pid: int, seconds: float) -> float:
    """SIGSTOP the process group led by `pid` (a service or a server and its children), then CONT."""
    started = time.monotonic()
    os.killpg(pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGCONT)
    return time.monotonic() - started


def _server_pid(state_dir: Path, name: str) -> int | None:
    server = next((s for s in local.load(state_dir) if s.name == name), None)
    return server.pid if server is not None and name in stack_infra(state_dir) else None


def restart_server(state_dir: Path, name: str, *, durable_postgres: bool) -> str:
    servers = local.load(state_dir)
    server = next((s for s in servers if s.name == name), None)
    if server is None or name not in (stack_infra(state_dir)):
        return f"skipped restarting {name}: the stack did not start it"
    local.stop(server)
    if name == "nats":
        fresh = local.restart_nats(server)  # from its own configuration: a cluster member rejoins
    else:
        fresh = local.start_postgres(state_dir, port=server.port, durable=durable_postgres)
    local.save(state_dir, [fresh if s.name == name else s for s in servers])
    return f"restarted {name} on port {server.port}"


def stack_infra(state_dir: Path) -> list[str]:
    loaded = stacks.Stack.load(state_dir)
    return loaded.infra if loaded else []
