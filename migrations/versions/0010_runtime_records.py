"""Runtime estimates and actual runtimes per gang (issue #20, reservation backfill): one table,
`runtime_records`, written by the leading scheduler when a gang starts (its estimate and where it
came from) and when it ends (its actual runtime and outcome). Estimates are learned from it, and
its rows show how accurate estimates were.

Ownership of each table is in migrations/README.md.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-27 18:40:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "runtime_records",
        sa.Column("gang_uid", sa.String(length=64), nullable=False),
        sa.Column("namespace", sa.String(length=253), nullable=False),
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("queue", sa.String(length=253), nullable=False),
        sa.Column("job_class", sa.String(length=253), nullable=True),
        sa.Column("estimate_seconds", sa.Float(), nullable=True),
        sa.Column("estimate_source", sa.String(length=32), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("actual_seconds", sa.Float(), nullable=True),
        sa.Column("outcome", sa.String(length=16), nullable=True),
        sa.PrimaryKeyConstraint("gang_uid", name=op.f("pk_runtime_records")),
    )
    op.create_index(
        op.f("ix_runtime_records_queue_job_class_finished_at"),
        "runtime_records",
        ["queue", "job_class", "finished_at"],
    )
    # The grants of 0004's ownership map, for what this revision adds.
    op.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON runtime_records TO phalanx_scheduler")
    op.execute("GRANT SELECT ON runtime_records TO phalanx_reader")


def downgrade() -> None:
    op.drop_table("runtime_records")
