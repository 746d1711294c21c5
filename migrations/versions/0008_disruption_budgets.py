"""PodDisruptionBudgets, projected by the scheduler's ingest for the pdb plugin (issue #16): the
preempt and reclaim actions never choose victims that a budget's disruptionsAllowed forbids.

Ownership of each table is in migrations/README.md.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25 22:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "disruption_budgets",
        sa.Column("uid", sa.String(length=64), nullable=False),
        sa.Column("namespace", sa.String(length=253), nullable=False),
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("selector", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("disruptions_allowed", sa.Integer(), nullable=False),
        sa.Column("resource_version", sa.BigInteger(), nullable=False),
        sa.Column("relist_id", sa.String(length=64), nullable=True),
        sa.Column("deleted", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column(
            "change_seq",
            sa.BigInteger(),
            server_default=sa.text("nextval('scheduler_change_seq')"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("uid", name=op.f("pk_disruption_budgets")),
    )
    op.create_index(op.f("ix_disruption_budgets_change_seq"), "disruption_budgets", ["change_seq"])
    # The grants of 0004's ownership map, for what this revision adds.
    op.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON disruption_budgets TO phalanx_scheduler")
    op.execute("GRANT SELECT ON disruption_budgets TO phalanx_reader")


def downgrade() -> None:
    op.drop_table("disruption_budgets")
