"""DRA objects the scheduler's device allocator reads (issue #26): one projected table,
`device_objects`, holding DeviceClasses, ResourceClaims and ResourceSlices keyed
"Kind/namespace/name", written by the scheduler's ingest like the other projected tables
(change_seq included); and `decisions.devices`, the devices a pending bind decision gave the
pod's claims, so the next cycle counts them as taken until the claims show the allocation.

Ownership of each table is in migrations/README.md.

Revision ID: 0012
Revises: 0009
Create Date: 2026-11-27 18:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "device_objects",
        sa.Column("key", sa.String(length=520), nullable=False),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("fields", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("resource_version", sa.BigInteger(), nullable=False),
        sa.Column("relist_id", sa.String(length=64), nullable=True),
        sa.Column("deleted", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column(
            "change_seq",
            sa.BigInteger(),
            server_default=sa.text("nextval('scheduler_change_seq')"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("key", name=op.f("pk_device_objects")),
    )
    op.create_index(op.f("ix_device_objects_change_seq"), "device_objects", ["change_seq"])
    op.add_column("decisions", sa.Column("devices", postgresql.JSONB(astext_type=sa.Text()), nullable=True))
    # The grants of 0004's ownership map, for what this revision adds.
    op.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON device_objects TO phalanx_scheduler")
    op.execute("GRANT SELECT ON device_objects TO phalanx_reader")


def downgrade() -> None:
    op.drop_column("decisions", "devices")
    op.drop_table("device_objects")
