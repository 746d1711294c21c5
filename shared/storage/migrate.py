"""Apply or revert the schema with Alembic, from code (the CLI, `phalanx up`, the tests).

Alembic's env.py runs its own event loop, so these are synchronous; call them from a thread when an
event loop is already running (`asyncio.to_thread(upgrade, url)`).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from alembic import command
from alembic.config import Config

SOURCE_ROOT = Path(__file__).resolve().parents[2]


def _root() -> Path:
    """The folder holding alembic.ini and migrations/: the source tree, or (in the container image,
    where the package is installed without them) the working directory."""
    for candidate in (SOURCE_ROOT, Path.cwd()):
        if (candidate / "alembic.ini").exists() and (candidate / "migrations").is_dir():
            return candidate
    installed = _installed_migrations()
    if installed is not None:
        return installed.parent
    raise FileNotFoundError(
        "alembic.ini and migrations/ not found beside the source or in the working directory"
    )


def _installed_migrations() -> Path | None:
    """The `migrations` package a wheel installs beside `shared` (no alembic.ini comes with it)."""
    spec = importlib.util.find_spec("migrations")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if (Path(folder) / "env.py").exists() and (Path(folder) / "versions").is_dir():
            return Path(folder)
    return None


def _config(url: str) -> Config:
    root = _root()
    ini = root / "alembic.ini"
    # Alembic's settings beyond the script location are logging, which env.py does not read.
    config = Config(str(ini)) if ini.exists() else Config()
    config.set_main_option("script_location", str(root / "migrations"))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(_config(url), revision)


def downgrade(url: str, revision: str = "base") -> None:
    command.downgrade(_config(url), revision)
