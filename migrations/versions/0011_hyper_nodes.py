"""HyperNodes and PodGroups' network-topology constraints (issue #26): the projected table
`hyper_nodes` (a HyperNode's tier, tier name and members as written), and the column
`pod_groups.topology` (the PodGroup's spec.networkTopology and spec.subGroupPolicy), both written
by the scheduler's ingest like the other projected tables (change_seq included).

Ownership of each table is in migrations/README.md.

Revision ID: 0011
Revises: 0009
Create Date: 2026-11-27 18:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "hyper_nodes",
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("tier", sa.Integer(), nullable=False),
        sa.Column("tier_name", sa.String(length=253), nullable=False),
        sa.Column("members", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("resource_version", sa.BigInteger(), nullable=False),
        sa.Column("relist_id", sa.String(length=64), nullable=True),
        sa.Column("deleted", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column(
            "change_seq",
            sa.BigInteger(),
            server_default=sa.text("nextval('scheduler_change_seq')"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_hyper_nodes")),
    )
    op.create_index(op.f("ix_hyper_nodes_change_seq"), "hyper_nodes", ["change_seq"])
    op.add_column("pod_groups", sa.Column("topology", postgresql.JSONB(astext_type=sa.Text()), nullable=True))
    # The grants of 0004's ownership map, for what this revision adds.
    op.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON hyper_nodes TO phalanx_scheduler")
    op.execute("GRANT SELECT ON hyper_nodes TO phalanx_reader")


def downgrade() -> None:
    op.drop_column("pod_groups", "topology")
    op.drop_table("hyper_nodes")
