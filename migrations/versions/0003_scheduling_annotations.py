"""The scheduler keeps queue and PodGroup annotations: hierarchical drf reads the queues'
volcano.sh/hierarchy(-weights), task-topology the PodGroups' volcano.sh/task-topology-*.

Ownership of each table is in migrations/README.md.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23 13:55:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    for table in ("queues", "pod_groups"):
        op.add_column(table, sa.Column("annotations", postgresql.JSONB(astext_type=sa.Text()), nullable=True))


def downgrade() -> None:
    for table in ("pod_groups", "queues"):
        op.drop_column(table, "annotations")
