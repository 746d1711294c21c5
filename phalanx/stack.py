"""The whole system as local processes: `phalanx up` / `phalanx down`, and the test suite's stack.

Starts NATS and PostgreSQL (shared.infra.provision: the environment's servers, containers, or
local processes), applies the migrations, starts the simulated cluster, then the four services as
`python -m services.<name>` processes configured by environment variables, and waits until each
answers `/readyz`. Everything it started is recorded in `<state>/stack.json`, so `phalanx down`
stops exactly that, and a crashed service can be restarted in place (`restart`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from phalanx.progress import Silent, Steps
from phalanx.scale import replica_names
from shared.bus import bootstrap, permissions
from shared.bus.nats import NatsBus
from shared.config import NatsSettings
from shared.infra import local, provision
from shared.storage import migrate, roles
from shared.storage.tables import metadata

SERVICES = ("watcher", "scheduler", "controller", "admission")
# The Secret in the simulated cluster that admission replicas keep their TLS material in.
ADMISSION_CERT_SECRET = "phalanx-admission-tls"
READY_TIMEOUT = 90.0


@dataclass
class Process:
    name: str
    pid: int
    log_path: str
    health_port: int
    env: dict[str, str]
    service: str = ""  # the service it runs (`services.<service>`); "" means the same as `name`

    @property
    def module(self) -> str:
        return self.service or self.name


@dataclass
class Stack:
    state_dir: str
    nats_url: str
    database_url: str
    kubeconfig: str
    simulator_url: str
    processes: list[Process] = field(default_factory=list)
    infra: list[str] = field(default_factory=list)  # names of infra servers we started ourselves
    # `nats_url` and `database_url` carry the bootstrap and owner credentials (tools and tests use
    # them); `phalanx events watch` reads the audit stream as the read-only auditor.
    auditor_nats_url: str = ""
    console_url: str = ""  # the read-only web console (services/console)

    def save(self) -> None:
        path = Path(self.state_dir, "stack.json")
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it holds passwords
        with os.fdopen(descriptor, "w") as file:
            file.write(json.dumps(asdict(self), indent=2))

    @classmethod
    def load(cls, state_dir: Path) -> Stack | None:
        path = state_dir / "stack.json"
        if not path.exists():
            return None
        raw = json.loads(path.read_text())
        raw["processes"] = [Process(**p) for p in raw["processes"]]
        return cls(**raw)

    def process(self, name: str) -> Process:
        return next(p for p in self.processes if p.name == name)

    def replicas(self, service: str) -> list[Process]:
        """Every process of `service`, in the order started (replica 0 first)."""
        return [p for p in self.processes if p.module == service]


def up(
    state_dir: Path,
    *,
    nodes_file: Path | None = None,
    scheduler_conf: Path | None = None,
    simulator_args: Sequence[str] = (),
    durable_postgres: bool = True,
    steps: Steps | None = None,
    scale: Mapping[str, int] | None = None,
) -> Stack:
    """`scale` (phalanx.scale.parse): how many NATS servers (a routed cluster) and admission
    replicas (behind the one webhook registration) to start; one of each when not given."""
    steps = steps or Silent()
    scale = scale or {}
    state_dir = state_dir.resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    if (existing := Stack.load(state_dir)) and all(local.is_alive(p.pid) for p in existing.processes):
        return existing
    logs = state_dir / "logs"
    logs.mkdir(exist_ok=True)
    started_infra: list[str] = []
    nats_servers = scale.get("nats", 1)
    steps.step("NATS (JetStream)" if nats_servers == 1 else f"NATS (JetStream), a cluster of {nats_servers}")
    nats = provision.provide_nats(state_dir, size=nats_servers)
    steps.step("PostgreSQL")
    postgres = provision.provide_postgres(state_dir, durable=durable_postgres)
    for name, provided in (("nats", nats), ("postgres", postgres)):
        if provided.how == "local process":
            started_infra.append(name)
    _record_local_infra(state_dir, nats, postgres)
    steps.step("the schema")
    # Migrations run as their own role, which owns the tables; the streams are made by the NATS
    # bootstrap identity, since the services' own may only look them up (docs/security.md).
    owner_url, bootstrap_url = postgres.url_as(roles.MIGRATOR), nats.url_as(permissions.BOOTSTRAP)
    try:
        migrate.upgrade(owner_url)
        # The simulated cluster starts empty, so whatever the streams and tables hold from an
        # earlier run describes a cluster that no longer exists.
        asyncio.run(forget_previous_cluster(bootstrap_url, owner_url))
    except BaseException:
        down(state_dir)  # the servers just started must not outlive a start that failed here
        raise

    kubeconfig = state_dir / "kubeconfig"
    kubeconfig.unlink(missing_ok=True)
    simulator_port = local.free_port()
    simulator_command = ["--port", str(simulator_port), "--kubeconfig", str(kubeconfig), *simulator_args]
    if nodes_file:
        simulator_command += ["--nodes", str(nodes_file)]
    stack = Stack(
        str(state_dir),
        bootstrap_url,
        owner_url,
        str(kubeconfig),
        f"http://127.0.0.1:{simulator_port}",
        infra=started_infra,
        auditor_nats_url=nats.url_as(permissions.AUDITOR),
    )
    try:
        steps.step("the simulated cluster")
        stack.processes.append(_spawn("simulator", simulator_command, {}, logs, health_port=0))
        stack.save()
        _wait_for_url(f"{stack.simulator_url}/version", stack.processes[-1])
        for name in SERVICES:
            env = _service_env(name, nats, postgres)
            for index, replica in enumerate(replica_names(name, scale.get(name, 1))):
                # Each replica's number (`<SERVICE>_REPLICA`) names its durables and lease identity.
                numbered = {**env, f"{name.upper()}_REPLICA": str(index)}
                stack.processes.append(
                    _spawn_service(
                        name, stack, numbered, logs, scheduler_conf=scheduler_conf, replica=replica
                    )
                )
        stack.processes.append(_spawn_console(stack, nats, postgres, logs))
        stack.save()
        steps.step(f"the services: {', '.join(SERVICES)}", total=len(stack.processes) - 1)
        for ready, process in enumerate(stack.processes[1:], start=1):
            _wait_for_url(f"http://127.0.0.1:{process.health_port}/readyz", process)
            steps.count(ready)
    except BaseException:
        # A service that cannot start must not leave the others (and the servers) running.
        down(state_dir)
        raise
    return stack


async def forget_previous_cluster(nats_url: str, database_url: str) -> None:
    """Empty streams and tables; `nats_url` must be allowed to delete and create streams."""
    bus = await NatsBus.connect(NatsSettings(url=nats_url), name="phalanx-up")
    try:
        for info in await bus.js.streams_info():
            if info.config.name:
                await bus.js.delete_stream(info.config.name)
    finally:
        await bus.close()
    # As the bootstrap identity: the services' own may only look the streams up.
    await bootstrap.create_streams(NatsSettings(url=nats_url))
    engine = create_async_engine(database_url)
    async with engine.begin() as transaction:
        names = ", ".join(metadata.tables)
        await transaction.execute(text(f"TRUNCATE {names}"))
    await engine.dispose()


def _record_local_infra(state_dir: Path, nats: provision.Provided, postgres: provision.Provided) -> None:
    """Local servers are stopped by `down`, so their pids go where `infra down` looks for them."""
    servers = [
        server
        for provided in (nats, postgres)
        if provided.how == "local process"
        for server in (provided.servers or ([provided.server] if provided.server else []))
    ]
    if servers:
        local.save(state_dir, servers)


def _service_env(name: str, nats: provision.Provided, postgres: provision.Provided) -> dict[str, str]:
    """Each service connects as itself: its NATS user and its PostgreSQL role, when we made them."""
    prefix = name.upper()
    env = {f"{prefix}_NATS__URL": nats.url, f"{prefix}_POSTGRES__URL": postgres.url_as(name)}
    if name in nats.credentials:
        user, password = nats.credentials[name]
        env |= {
            f"{prefix}_NATS__USER": user,
            f"{prefix}_NATS__PASSWORD": password,
            f"{prefix}_NATS__MANAGE_STREAMS": "false",
        }
    return env


def _spawn_service(
    name: str,
    stack: Stack,
    env: dict[str, str],
    logs: Path,
    *,
    scheduler_conf: Path | None,
    replica: str | None = None,
) -> Process:
    health_port = local.free_port()
    prefix = name.upper()
    env = {**env, f"{prefix}_HEALTH_PORT": str(health_port), f"{prefix}_LOG__FORMAT": "json"}
    if name != "scheduler":
        env[f"{prefix}_KUBECONFIG"] = stack.kubeconfig
    replica = replica or name
    if name == "admission":
        env |= _admission_env(stack, replica)
    if name == "scheduler" and scheduler_conf:
        env["SCHEDULER_CONF_FILE"] = str(scheduler_conf)
    return _spawn(replica, [], env, logs, health_port=health_port, service=name)


def _admission_env(stack: Stack, replica: str) -> dict[str, str]:
    """Every replica listens on the one webhook port (SO_REUSEPORT: the kernel spreads the API
    server's connections, as a Service would) and serves the CA and certificate they keep in one
    Secret; the first replica's port is the one the webhook registration names."""
    port = (
        next(
            (int(p.env["ADMISSION_PORT"]) for p in stack.processes if p.env.get("ADMISSION_PORT")),
            None,
        )
        or local.free_port()
    )
    return {
        "ADMISSION_PORT": str(port),
        "ADMISSION_HOST": "127.0.0.1",
        "ADMISSION_REUSE_PORT": "true",
        "ADMISSION_WEBHOOK_URL": f"https://127.0.0.1:{port}",
        "ADMISSION_CERT_DIR": str(Path(stack.state_dir) / f"{replica}-certs"),
        "ADMISSION_CERT_SECRET": ADMISSION_CERT_SECRET,
        "ADMISSION_CERT_SECRET_NAMESPACE": "kube-system",
    }


def _spawn_console(
    stack: Stack, nats: provision.Provided, postgres: provision.Provided, logs: Path
) -> Process:
    """The console reads as `phalanx_reader` and the NATS `auditor`, on a free loopback port."""
    port, health_port = local.free_port(), local.free_port()
    stack.console_url = f"http://127.0.0.1:{port}"
    env = {
        "CONSOLE_NATS__URL": nats.url,
        "CONSOLE_POSTGRES__URL": postgres.url_as(roles.READER),
        "CONSOLE_KUBECONFIG": stack.kubeconfig,
        "CONSOLE_PORT": str(port),
        "CONSOLE_HEALTH_PORT": str(health_port),
        "CONSOLE_LOG__FORMAT": "json",
    }
    if permissions.AUDITOR in nats.credentials:
        user, password = nats.credentials[permissions.AUDITOR]
        env |= {"CONSOLE_NATS__USER": user, "CONSOLE_NATS__PASSWORD": password}
    return _spawn("console", [], env, logs, health_port=health_port)


def _spawn(
    name: str, args: list[str], env: dict[str, str], logs: Path, *, health_port: int, service: str = ""
) -> Process:
    """Start `services.<service>` (default: `name`) as the process `name`, logging to `<name>.log`."""
    log_path = logs / f"{name}.log"
    module = f"services.{service or name}"
    with open(log_path, "ab") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            env={**os.environ, **env, "PYTHONUNBUFFERED": "1"},
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    replica_of = "" if service in ("", name) else service
    return Process(name, process.pid, str(log_path), health_port, env, replica_of)


def _wait_for_url(url: str, process: Process, timeout: float = READY_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not local.is_alive(process.pid) or _reaped(process.pid):
            raise RuntimeError(
                f"{process.name} exited at start; see {process.log_path}:\n{_tail(process.log_path)}"
            )
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=1) as response:
            if response.status == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{process.name} was not ready within {timeout:.0f} s; see {process.log_path}")


def _reaped(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == pid
    return False


def _tail(path: str, lines: int = 30) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    return ""


def stop_process(process: Process, *, sig: int = signal.SIGTERM, timeout: float = 15.0) -> None:
    stop_processes([process], sig=sig, timeout=timeout)


def stop_processes(processes: Sequence[Process], *, sig: int = signal.SIGTERM, timeout: float = 15.0) -> None:
    """Signal every process group at once, wait for all (up to `timeout`), then SIGKILL the rest.

    Together rather than one after the other: each service drains on SIGTERM (finishes what it
    holds, flushes its outbox), and those drains overlap instead of adding up.
    """
    for process in processes:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
    waiting = list(processes)
    deadline = time.monotonic() + timeout
    while waiting and time.monotonic() < deadline:
        waiting = [p for p in waiting if not _reaped(p.pid) and local.is_alive(p.pid)]
        if waiting:
            time.sleep(0.05)
    for process in waiting:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        _reaped(process.pid)


def restart(stack: Stack, name: str, *, kill: bool = True) -> Process:
    """Kill (SIGKILL) one process of the stack and start it again with the same settings."""
    old = stack.process(name)
    if kill:
        stop_process(old, sig=signal.SIGKILL)
    logs = Path(old.log_path).parent
    if name == "simulator":
        raise ValueError("the simulator holds the cluster's state; restarting it would lose the cluster")
    new = _spawn(name, [], old.env, logs, health_port=old.health_port, service=old.service)
    stack.processes[stack.processes.index(old)] = new
    stack.save()
    _wait_for_url(f"http://127.0.0.1:{new.health_port}/readyz", new)
    return new


def down(state_dir: Path) -> list[str]:
    """Stop the services first (they drain into NATS and PostgreSQL), then the simulated cluster,
    then NATS and PostgreSQL; returns the names of what was stopped."""
    state_dir = state_dir.resolve()
    stopped = []
    stack = Stack.load(state_dir)
    if stack is not None:
        services = [p for p in stack.processes if p.name != "simulator"]
        for group in (services, [p for p in stack.processes if p.name == "simulator"]):
            stop_processes(group)
            stopped += [p.name for p in group]
        (state_dir / "stack.json").unlink(missing_ok=True)
    servers = local.down(state_dir)
    for server in servers:
        # `up` starts every cluster from empty tables, so nothing in them is worth keeping.
        local.discard_fallback_data(server)
    return stopped + [s.name for s in servers]
