"""Apply or revert the schema with Alembic, from code (the CLI, `phalanx up`, the tests).

Alembic's env.py runs its own event loop, so these are synchronous; call them from a thread when an
event loop is already running (`asyncio.to_thread(upgrade, url)`).
"""

from __future__ import annotations

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
    raise FileNotFoundError(
        "alembic.ini and migrations/ not found beside the source or in the working directory"
    )


def _config(url: str) -> Config:
    root = _root()
    config = Config(str(root / "alembic.ini"))
    config.set_main_option("script_location", str(root / "migrations"))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(_config(url), revision)


def downgrade(url: str, revision: str = "base") -> None:
    command.downgrade(_config(url), revision)
