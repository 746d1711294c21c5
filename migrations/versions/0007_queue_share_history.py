"""Each queue's share over the last hours, for the console's chart (issue #19): the leading
scheduler samples it about once a minute into `queue_share_history` and deletes what is older than
the hours it keeps; the console reads it as `phalanx_reader`.

Ownership of each table is in migrations/README.md.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25 21:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "queue_share_history",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("queue", sa.String(length=253), nullable=False),
        sa.Column("sampled_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("share", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_queue_share_history")),
    )
    op.create_index(op.f("ix_queue_share_history_sampled_at"), "queue_share_history", ["sampled_at"])
    op.create_index(
        op.f("ix_queue_share_history_queue_sampled_at"), "queue_share_history", ["queue", "sampled_at"]
    )
    # The grants of 0004's ownership map, for what this revision adds.
    op.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON queue_share_history TO phalanx_scheduler")
    op.execute("GRANT USAGE, SELECT ON SEQUENCE queue_share_history_id_seq TO phalanx_scheduler")
    op.execute("GRANT SELECT ON queue_share_history TO phalanx_reader")


def downgrade() -> None:
    op.drop_table("queue_share_history")
