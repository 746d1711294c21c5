"""The controller's job timers: policy timeouts and ttlSecondsAfterFinished survive a restart.

Ownership of each table is in migrations/README.md.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23 13:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "job_timers",
        sa.Column("job_uid", sa.String(length=64), nullable=False),
        sa.Column("key", sa.String(length=253), nullable=False),
        sa.Column("due", sa.DateTime(timezone=True), nullable=False),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("event", sa.String(length=32), nullable=False),
        sa.Column("task", sa.String(length=253), nullable=False),
        sa.Column("pod", sa.String(length=253), nullable=False),
        sa.Column("pod_uid", sa.String(length=64), nullable=False),
        sa.Column("partition", sa.String(length=253), nullable=False),
        sa.PrimaryKeyConstraint("job_uid", "key", name=op.f("pk_job_timers")),
    )


def downgrade() -> None:
    op.drop_table("job_timers")
