"""Leases that let services run as several replicas (issue #22): the controller's shards of the
job-key space (`controller_shards`) with its live replicas (`controller_members`), and the
watcher's one-active-per-kind leases with each kind's resume point (`watcher_leases`).

Each lease row carries an epoch that moves whenever another process takes it, so a replica that
lost a lease can be told apart from the one that holds it now (docs/scaling.md). Ownership of each
table is in migrations/README.md.

Revision ID: 0013
Revises: 0009
Create Date: 2026-11-27 18:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "controller_shards",
        sa.Column("shard", sa.Integer(), nullable=False),
        sa.Column("holder", sa.String(length=253), nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("shard", name=op.f("pk_controller_shards")),
    )
    op.create_table(
        "controller_members",
        sa.Column("holder", sa.String(length=253), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("holder", name=op.f("pk_controller_members")),
    )
    op.create_table(
        "watcher_leases",
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("holder", sa.String(length=253), nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("resource_version", sa.String(length=64), server_default="", nullable=False),
        sa.PrimaryKeyConstraint("kind", name=op.f("pk_watcher_leases")),
    )
    # The grants of 0004's ownership map, for what this revision adds.
    op.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON controller_shards, controller_members TO phalanx_controller")
    op.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON watcher_leases TO phalanx_watcher")
    op.execute("GRANT SELECT ON controller_shards, controller_members, watcher_leases TO phalanx_reader")


def downgrade() -> None:
    op.drop_table("watcher_leases")
    op.drop_table("controller_members")
    op.drop_table("controller_shards")
