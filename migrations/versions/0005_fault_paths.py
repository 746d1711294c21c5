"""Ingest remembers the newest relist marker applied per kind, so that an older marker delivered
again late does not tombstone the rows of a newer relist (issue #13, path 6); the controller's
gang fences keep the cycle beside the epoch, so an old decision of the same leader is stale too
(path 2). The controller reads the scheduler's lease row to refuse decisions that do not come
from the leader in time, so its role may now read (only read) `scheduler_leader`.

Ownership of each table is in migrations/README.md.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25 17:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "resync_markers",
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("relist_id", sa.String(length=64), nullable=False),
        sa.Column("resource_version", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("kind"),
    )
    op.add_column("gang_fences", sa.Column("cycle", sa.BigInteger(), server_default=sa.text("0"), nullable=False))
    # The grants of 0004's ownership map, for what this revision adds.
    op.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON resync_markers TO phalanx_scheduler")
    op.execute("GRANT SELECT ON resync_markers TO phalanx_reader")
    op.execute("GRANT SELECT ON scheduler_leader TO phalanx_controller")


def downgrade() -> None:
    op.execute("REVOKE SELECT ON scheduler_leader FROM phalanx_controller")
    op.drop_column("gang_fences", "cycle")
    op.drop_table("resync_markers")
