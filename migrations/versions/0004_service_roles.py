"""One PostgreSQL role per service, granted exactly the table-ownership map of migrations/README.md,
so that the database itself refuses a second writer of a table.

The roles are created here (NOLOGIN) when they do not exist yet; whoever provisions the server
gives them LOGIN and a password (`phalanx up` does; on a real cluster the DBA does, see
docs/security.md). Roles are shared by every database of the server, so the downgrade only takes
the grants back.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25 17:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

SCHEDULER_TABLES = (
    "queues",
    "nodes",
    "priority_classes",
    "pod_groups",
    "pods",
    "scheduler_config",
    "decisions",
    "gang_verdicts",
    "scheduler_leader",
    "scheduler_outbox",
)
CONTROLLER_TABLES = ("jobs", "applied_commands", "gang_fences", "job_timers", "controller_outbox")

# role: (tables it writes, tables it only reads)
GRANTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "phalanx_scheduler": (SCHEDULER_TABLES, ()),
    "phalanx_controller": (CONTROLLER_TABLES, ()),
    "phalanx_admission": ((), ("queues", "priority_classes", "pod_groups")),
    "phalanx_watcher": ((), ()),
    # The CLI (`phalanx job why`), benchmarks and dashboards: every table, read only.
    "phalanx_reader": ((), SCHEDULER_TABLES + CONTROLLER_TABLES),
}


def _ensure_role(role: str) -> None:
    op.execute(
        f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') "
        f"THEN CREATE ROLE {role} NOLOGIN; END IF; END $$"
    )


def _sequences(tables: Sequence[str]) -> list[str]:
    """The sequences behind the serial columns of `tables` (writers need them to insert)."""
    rows = op.get_bind().execute(
        sa.text(
            "SELECT pg_get_serial_sequence(table_name, column_name) FROM information_schema.columns "
            "WHERE table_schema = 'public' AND table_name = ANY(:tables)"
        ),
        {"tables": list(tables)},
    )
    return [sequence for (sequence,) in rows if sequence]


def upgrade() -> None:
    for role, (writes, reads) in GRANTS.items():
        _ensure_role(role)
        op.execute(f"GRANT USAGE ON SCHEMA public TO {role}")
        if writes:
            op.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {', '.join(writes)} TO {role}")
        for sequence in _sequences(writes):
            op.execute(f"GRANT USAGE, SELECT ON SEQUENCE {sequence} TO {role}")
        if reads:
            op.execute(f"GRANT SELECT ON {', '.join(reads)} TO {role}")


def downgrade() -> None:
    for role, (writes, reads) in GRANTS.items():
        tables = writes + reads
        if tables:
            op.execute(f"REVOKE ALL ON {', '.join(tables)} FROM {role}")
        for sequence in _sequences(writes):
            op.execute(f"REVOKE ALL ON SEQUENCE {sequence} FROM {role}")
        op.execute(f"REVOKE USAGE ON SCHEMA public FROM {role}")
