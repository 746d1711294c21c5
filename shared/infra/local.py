"""Start and stop NATS (JetStream) and PostgreSQL as local processes on free loopback ports.

Used by `phalanx infra up` / `phalanx up` (state kept in a folder, servers outliving the command)
and by the test fixtures (a temporary folder, servers stopped at the end). PostgreSQL refuses to
run as root, so under root it runs as the unprivileged user `nobody`, from a copy of its install
tree and a data folder that user can reach.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from shared.infra import binaries, nats_auth, passwords
from shared.storage import roles

UNPRIVILEGED_USER = "nobody"
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


def free_port() -> int:
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


def start_nats(state_dir: Path, *, port: int | None = None) -> LocalServer:
    """A JetStream server that admits only the users of `shared.bus.permissions`, each limited to
    its subjects; the passwords are in `<state_dir>/nats-users.json` (nats_auth.passwords_for)."""
    port = port or free_port()
    data = state_dir / "nats"
    data.mkdir(parents=True, exist_ok=True)
    log_path = state_dir / "nats.log"
    config = state_dir / "nats.conf"
    descriptor = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(nats_auth.render(nats_auth.passwords_for(state_dir)))
    process = subprocess.Popen(
        [
            str(binaries.nats_server()),
            "-c",
            str(config),
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
    _wait_for_port(port, process, log_path, "nats-server")
    return LocalServer("nats", process.pid, port, f"nats://127.0.0.1:{port}", str(data), str(log_path))


# -- PostgreSQL ----------------------------------------------------------------------------------


def _running_as_root() -> bool:
    return os.geteuid() == 0


def _reachable_by_others(path: Path) -> bool:
    """True when every folder above `path` lets other users through (the x bit for others)."""
    return all(not parent.exists() or os.stat(parent).st_mode & 0o001 for parent in [path, *path.parents])


def _postgres_tree_for(user_is_other: bool) -> Path:
    """The bin folder to run, copied out to /tmp when `nobody` cannot reach the installed one."""
    bin_dir = binaries.postgres_bin_dir()
    if not user_is_other or _reachable_by_others(bin_dir):
        return bin_dir
    tree = bin_dir.parent
    digest = hashlib.sha256(str(tree).encode()).hexdigest()[:12]
    copy = Path(tempfile.gettempdir()) / f"phalanx-pginstall-{digest}"
    if not (copy / "bin" / "postgres").exists():
        staging = copy.with_suffix(".tmp")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(tree, staging, symlinks=True)
        os.chmod(staging, 0o755)
        staging.rename(copy)
    return copy / "bin"


def _data_dir_for(state_dir: Path, as_other: bool) -> Path:
    data = state_dir / "postgres"
    if as_other and not _reachable_by_others(state_dir.resolve()):
        digest = hashlib.sha256(str(state_dir.resolve()).encode()).hexdigest()[:12]
        data = Path(tempfile.gettempdir()) / f"phalanx-pgdata-{digest}"
    return data


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
        subprocess.run(
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
            check=True,
            capture_output=True,
            cwd=tempfile.gettempdir(),
            **run_as,  # type: ignore[call-overload]
        )
    finally:
        os.unlink(pwfile)


def start_postgres(state_dir: Path, *, port: int | None = None, durable: bool = True) -> LocalServer:
    """PostgreSQL with the database `phalanx`; `durable=False` (tests, benchmarks) turns fsync off."""
    port = port or free_port()
    superuser_password = postgres_passwords(state_dir)[SUPERUSER]
    as_other = _running_as_root()
    bin_dir = _postgres_tree_for(as_other)
    data = _data_dir_for(state_dir, as_other)
    log_path = state_dir / "postgres.log"
    state_dir.mkdir(parents=True, exist_ok=True)
    run_as: dict[str, object] = {}
    if as_other:
        user = pwd.getpwnam(UNPRIVILEGED_USER)
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
    return True


def stop(server: LocalServer, *, timeout: float = 15.0) -> None:
    """SIGTERM (PostgreSQL: a fast shutdown), then SIGKILL if it lingers."""
    sig = signal.SIGINT if server.name == "postgres" else signal.SIGTERM
    with contextlib.suppress(ProcessLookupError):
        os.kill(server.pid, sig)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(server.pid, os.WNOHANG)
        if not is_alive(server.pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(server.pid, signal.SIGKILL)


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
    for server in servers:
        stop(server)
    save(state_dir, [])
    return servers
