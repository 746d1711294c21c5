"""Start and stop NATS (JetStream) and PostgreSQL as local processes on free loopback ports.

Used by `phalanx infra up` / `phalanx up` (state kept in a folder, servers outliving the command)
and by the test fixtures (a temporary folder, servers stopped at the end). PostgreSQL refuses to
run as root, so under root it runs as the unprivileged user `nobody`, from a copy of its install
tree and a data folder that user can reach.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from shared.infra import binaries, nats_auth, passwords
from shared.infra.postgres_paths import (
    FALLBACK_DATA_PREFIX,
    UNPRIVILEGED_USER,
    data_dir_for,
    postgres_tree_for,
    running_as_root,
)
from shared.storage import roles

_AS_ROOT_ADVICE = (
    "run it as an ordinary user, or point PHALANX_DATABASE_URL at a PostgreSQL server you run yourself"
)
DATABASE = "phalanx"
SUPERUSER = "postgres"
POSTGRES_USERS_FILE = "postgres-users.json"


@dataclass(frozen=True)
class LocalServer:
    name: str
    pid: int
    port: int
    url: str
    data_dir: str
    log_path: str


# "LOW-HIGH": listening ports are drawn from this range instead of the kernel's ephemeral one. The
# test suite gives each parallel worker a range of its own below the ephemeral ports, so a server
# killed and restarted on its port (a fault test) never finds it taken by another worker's server
# or by an outgoing connection's ephemeral port.
PORT_RANGE_ENV = "PHALANX_PORT_RANGE"


# Ports this process handed out: a port is free when asked for but taken only when its server
# starts, so a NATS cluster that asks for six before starting any could get one twice.
_handed_out: set[int] = set()


def free_port() -> int:
    bounds = os.environ.get(PORT_RANGE_ENV, "")
    if bounds:
        low, high = (int(b) for b in bounds.split("-", 1))
        for _ in range(2):
            fresh = [p for p in range(low, high + 1) if p not in _handed_out]
            for port in random.sample(fresh, min(200, len(fresh))):
                with socket.socket() as sock, contextlib.suppress(OSError):
                    sock.bind(("127.0.0.1", port))
                    _handed_out.add(port)
                    return port
            _handed_out.clear()  # the range used up: ports handed out long ago are free again
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log_path: Path, what: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited at start; see {log_path}:\n{_tail(log_path)}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on port {port} within 30 s; see {log_path}")


def _tail(path: Path, lines: int = 20) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return ""


def start_nats(
    state_dir: Path,
    *,
    port: int | None = None,
    name: str = "nats",
    cluster: nats_auth.ClusterMember | None = None,
) -> LocalServer:
    """A JetStream server that admits only the users of `shared.bus.permissions`, each limited to
    its subjects; the passwords are in `<state_dir>/nats-users.json` (nats_auth.passwords_for).

    `name` names its files in `state_dir` (`<name>.conf`, `<name>.log`, the store `<name>/`), so
    the members of a cluster (`cluster`) share the folder without sharing a file.
    """
    port = port or free_port()
    config = state_dir / f"{name}.conf"
    text = nats_auth.render(nats_auth.passwords_for(state_dir))
    if cluster is not None:
        text += nats_auth.render_cluster(cluster)
    state_dir.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
    return _launch_nats(state_dir, name, port)


def _launch_nats(state_dir: Path, name: str, port: int) -> LocalServer:
    data = state_dir / name
    data.mkdir(parents=True, exist_ok=True)
    log_path = state_dir / f"{name}.log"
    process = subprocess.Popen(
        [
            str(binaries.nats_server()),
            "-c",
            str(state_dir / f"{name}.conf"),
            "-a",
            "127.0.0.1",
            "-p",
            str(port),
            "-js",
            "-sd",
            str(data),
            "-l",
            str(log_path),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    _wait_for_port(port, process, log_path, f"nats-server {name}")
    return LocalServer(name, process.pid, port, f"nats://127.0.0.1:{port}", str(data), str(log_path))


def restart_nats(server: LocalServer) -> LocalServer:
    """Start a stopped NATS server again from its own configuration, port and store (a cluster
    member rejoins its cluster; its store catches up from the others)."""
    return _launch_nats(Path(server.log_path).parent, server.name, server.port)


# -- PostgreSQL ----------------------------------------------------------------------------------


def postgres_passwords(state_dir: Path) -> dict[str, str]:
    """The superuser's and every service role's password for the PostgreSQL of `state_dir`."""
    return passwords.stored(state_dir / POSTGRES_USERS_FILE, (SUPERUSER, *roles.ROLES))


def _initdb(bin_dir: Path, data: Path, superuser_password: str, run_as: dict[str, object]) -> None:
    """A new cluster that asks every TCP client for a password (SCRAM); only the owner's socket,
    inside the data folder, is trusted."""
    descriptor, pwfile = tempfile.mkstemp(prefix="phalanx-pw-")
    try:
        with os.fdopen(descriptor, "w") as file:
            file.write(superuser_password + "\n")
        if run_as:
            os.chown(pwfile, int(run_as["user"]), int(run_as["group"]))  # type: ignore[call-overload]
        done = subprocess.run(
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                SUPERUSER,
                f"--pwfile={pwfile}",
                "--auth-host=scram-sha-256",
                "--auth-local=trust",
                "--encoding=UTF8",
                "--no-sync",
            ],
            capture_output=True,
            cwd=tempfile.gettempdir(),
            **run_as,  # type: ignore[call-overload]
        )
        if done.returncode != 0:
            who = f" as {UNPRIVILEGED_USER}" if run_as else ""
            output = (done.stderr or done.stdout).decode(errors="replace").strip()
            advice = f"; {_AS_ROOT_ADVICE}" if run_as else ""
            raise RuntimeError(f"PostgreSQL's initdb{who} failed (exit {done.returncode}): {output}{advice}")
    finally:
        os.unlink(pwfile)


def start_postgres(state_dir: Path, *, port: int | None = None, durable: bool = True) -> LocalServer:
    """PostgreSQL with the database `phalanx`; `durable=False` (tests, benchmarks) turns fsync off."""
    port = port or free_port()
    superuser_password = postgres_passwords(state_dir)[SUPERUSER]
    as_other = running_as_root()
    bin_dir = postgres_tree_for(as_other)
    data = data_dir_for(state_dir, as_other)
    log_path = state_dir / "postgres.log"
    state_dir.mkdir(parents=True, exist_ok=True)
    run_as: dict[str, object] = {}
    if as_other:
        try:
            user = pwd.getpwnam(UNPRIVILEGED_USER)
        except KeyError:
            raise RuntimeError(
                f"PostgreSQL does not run as root, and there is no user {UNPRIVILEGED_USER!r} to run it as; "
                f"{_AS_ROOT_ADVICE}"
            ) from None
        run_as = {"user": user.pw_uid, "group": user.pw_gid}
    fresh = not (data / "PG_VERSION").exists()
    if fresh:
        data.mkdir(parents=True, exist_ok=True)
        if as_other:
            os.chown(data, int(run_as["user"]), int(run_as["group"]))  # type: ignore[call-overload]
        _initdb(bin_dir, data, superuser_password, run_as)
    with open(log_path, "ab") as log_file:
        if as_other:
            os.chown(log_path, int(run_as["user"]), int(run_as["group"]))  # type: ignore[call-overload]
        process = subprocess.Popen(
            [
                str(bin_dir / "postgres"),
                "-D",
                str(data),
                "-p",
                str(port),
                "-h",
                "127.0.0.1",
                "-k",
                str(data),
                "-c",
                "max_connections=200",
                *_unsafe_speed_flags(durable),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=log_file,
            start_new_session=True,
            cwd=tempfile.gettempdir(),
            **run_as,  # type: ignore[call-overload]
        )
    _wait_for_port(port, process, log_path, "postgres")
    _wait_until_accepting(bin_dir, port, process, log_path)
    if fresh:
        subprocess.run(
            [
                str(bin_dir / "createdb"),
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
                "-U",
                SUPERUSER,
                DATABASE,
            ],
            check=True,
            capture_output=True,
            env={**os.environ, "PGPASSWORD": superuser_password},
        )
    url = f"postgresql+asyncpg://{SUPERUSER}:{superuser_password}@127.0.0.1:{port}/{DATABASE}"
    return LocalServer("postgres", process.pid, port, url, str(data), str(log_path))


def _unsafe_speed_flags(durable: bool) -> list[str]:
    if durable:
        return []
    return ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]


def _wait_until_accepting(bin_dir: Path, port: int, process: subprocess.Popen[bytes], log_path: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"postgres exited at start; see {log_path}:\n{_tail(log_path)}")
        ready = subprocess.run(
            [str(bin_dir / "pg_isready"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres"],
            capture_output=True,
        )
        if ready.returncode == 0:
            return
        time.sleep(0.1)
    raise RuntimeError(f"postgres did not accept connections within 30 s; see {log_path}")


# -- lifecycle -----------------------------------------------------------------------------------


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    """Exited but not yet reaped: once `phalanx up` has returned, its servers' parent is init, which
    may reap them only seconds later; `down` must not wait for that."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def stop(server: LocalServer, *, timeout: float = 15.0) -> None:
    stop_all([server], timeout=timeout)


def stop_all(servers: list[LocalServer], *, timeout: float = 15.0) -> None:
    """SIGTERM (PostgreSQL: SIGINT, a fast shutdown) to all at once, then SIGKILL what lingers."""
    for server in servers:
        with contextlib.suppress(ProcessLookupError):
            os.kill(server.pid, signal.SIGINT if server.name == "postgres" else signal.SIGTERM)
    waiting = list(servers)
    deadline = time.monotonic() + timeout
    while waiting and time.monotonic() < deadline:
        for server in waiting:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(server.pid, os.WNOHANG)
        waiting = [s for s in waiting if is_alive(s.pid)]
        if waiting:
            time.sleep(0.05)
    for server in waiting:
        with contextlib.suppress(ProcessLookupError):
            os.kill(server.pid, signal.SIGKILL)


def discard_fallback_data(server: LocalServer) -> None:
    """Remove a stopped PostgreSQL's data folder if it had to live in the temporary folder (its
    state folder was out of `nobody`'s reach): nothing else ever removes it, unlike the data folder
    inside a state folder, which goes with that folder."""
    data = Path(server.data_dir)
    fallback = data.parent == Path(tempfile.gettempdir()) and data.name.startswith(FALLBACK_DATA_PREFIX)
    if server.name == "postgres" and fallback and not is_alive(server.pid):
        shutil.rmtree(data, ignore_errors=True)


def save(state_dir: Path, servers: list[LocalServer]) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "infra.json").write_text(json.dumps([asdict(s) for s in servers], indent=2))


def load(state_dir: Path) -> list[LocalServer]:
    path = state_dir / "infra.json"
    if not path.exists():
        return []
    return [LocalServer(**entry) for entry in json.loads(path.read_text())]


def up(state_dir: Path) -> list[LocalServer]:
    """Start NATS and PostgreSQL unless they already run for this state folder; returns both."""
    running = [s for s in load(state_dir) if is_alive(s.pid)]
    names = {s.name for s in running}
    if "nats" not in names:
        running.append(start_nats(state_dir))
    if "postgres" not in names:
        running.append(start_postgres(state_dir))
    save(state_dir, running)
    return running


def down(state_dir: Path) -> list[LocalServer]:
    servers = load(state_dir)
    stop_all(servers)
    save(state_dir, [])
    return servers
