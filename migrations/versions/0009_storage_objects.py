"""The PersistentVolumeClaims, PersistentVolumes and StorageClasses the scheduler's VolumeBinding
filter reads (issue #16): one projected table, `storage_objects`, keyed "Kind/namespace/name",
written by the scheduler's ingest like the other projected tables (change_seq included).

Ownership of each table is in migrations/README.md.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25 22:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "storage_objects",
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
        sa.PrimaryKeyConstraint("key", name=op.f("pk_storage_objects")),
    )
    op.create_index(op.f("ix_storage_objects_change_seq"), "storage_objects", ["change_seq"])
    # The grants of 0004's ownership map, for what this revision adds.
    op.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON storage_objects TO phalanx_scheduler")
    op.execute("GRANT SELECT ON storage_objects TO phalanx_reader")


def downgrade() -> None:
    op.drop_table("storage_objects")
