"""Every row ingest writes carries `change_seq`, from one sequence, so the scheduler's cycle can
keep the cluster in memory and read only the rows changed since the last sequence it saw (issue
#15). Ingest serialises its transactions (an advisory lock), so a row that commits later always
carries a higher number than every row visible before it.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25 20:20:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PROJECTED = ("queues", "nodes", "priority_classes", "pod_groups", "pods", "scheduler_config")


def upgrade() -> None:
    op.execute("CREATE SEQUENCE scheduler_change_seq AS BIGINT")
    for table in PROJECTED:
        op.add_column(
            table,
            sa.Column(
                "change_seq",
                sa.BigInteger(),
                server_default=sa.text("nextval('scheduler_change_seq')"),
                nullable=False,
            ),
        )
        op.create_index(f"ix_{table}_change_seq", table, ["change_seq"])
    # Ingest (the tables' one writer) draws the numbers; readers see them as columns.
    op.execute("GRANT USAGE, SELECT ON SEQUENCE scheduler_change_seq TO phalanx_scheduler")


def downgrade() -> None:
    for table in PROJECTED:
        op.drop_index(f"ix_{table}_change_seq", table_name=table)
        op.drop_column(table, "change_seq")
    op.execute("DROP SEQUENCE scheduler_change_seq")
