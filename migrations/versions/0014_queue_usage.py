"""Each queue's decayed usage over time, for the fairshare plugin (issue #21): per queue, per
resource, the integral of its share of the cluster with older use halving every half-life, as of
`updated_at`. The leading scheduler writes it in its fenced cycle commit and reads it back when it
starts leading, so a restart or a failover loses nothing (services/scheduler/queue_usage.py).

Ownership of each table is in migrations/README.md.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-27 19:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0014"
down_revision: str | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "queue_usage",
        sa.Column("queue", sa.String(length=253), nullable=False),
        sa.Column("usage", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("queue", name=op.f("pk_queue_usage")),
    )
    # The grants of 0004's ownership map, for what this revision adds.
    op.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON queue_usage TO phalanx_scheduler")
    op.execute("GRANT SELECT ON queue_usage TO phalanx_reader")


def downgrade() -> None:
    op.drop_table("queue_usage")
