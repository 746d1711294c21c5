"""The first schema: the scheduler's projections, decisions and leadership; the controller's records.

Ownership of each table is in migrations/README.md.

Revision ID: 0001
Revises:
Create Date: 2026-11-23 09:38:32.656311
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "applied_commands",
        sa.Column("uid", sa.String(length=64), nullable=False),
        sa.Column("namespace", sa.String(length=253), nullable=False),
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("action", sa.String(length=32), nullable=False),
        sa.Column("target", sa.String(length=512), nullable=False),
        sa.Column("applied_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("uid", name=op.f("pk_applied_commands")),
    )
    op.create_table(
        "controller_outbox",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("msg_id", sa.String(length=200), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_controller_outbox")),
    )
    op.create_index(
        "ix_controller_outbox_unpublished",
        "controller_outbox",
        ["id"],
        unique=False,
        postgresql_where=sa.text("published_at IS NULL"),
    )
    op.create_table(
        "decisions",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("cycle", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("gang_uid", sa.String(length=64), nullable=False),
        sa.Column("pod_uid", sa.String(length=64), nullable=True),
        sa.Column("node", sa.String(length=253), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_decisions")),
    )
    op.create_index(op.f("ix_decisions_gang_uid"), "decisions", ["gang_uid"], unique=False)
    op.create_index(
        "ix_decisions_pending",
        "decisions",
        ["kind", "pod_uid"],
        unique=False,
        postgresql_where=sa.text("state = 'pending'"),
    )
    op.create_table(
        "gang_fences",
        sa.Column("gang_uid", sa.String(length=64), nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("gang_uid", name=op.f("pk_gang_fences")),
    )
    op.create_table(
        "gang_verdicts",
        sa.Column("gang_uid", sa.String(length=64), nullable=False),
        sa.Column("namespace", sa.String(length=253), nullable=False),
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("queue", sa.String(length=253), nullable=False),
        sa.Column("reason", sa.String(length=64), nullable=False),
        sa.Column("condition_reason", sa.String(length=64), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("cycle", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("gang_uid", name=op.f("pk_gang_verdicts")),
    )
    op.create_table(
        "jobs",
        sa.Column("uid", sa.String(length=64), nullable=False),
        sa.Column("namespace", sa.String(length=253), nullable=False),
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("phase", sa.String(length=32), nullable=False),
        sa.Column("retry_count", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("state", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("uid", name=op.f("pk_jobs")),
    )
    op.create_index(op.f("ix_jobs_namespace_name"), "jobs", ["namespace", "name"], unique=False)
    op.create_table(
        "nodes",
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("uid", sa.String(length=64), nullable=True),
        sa.Column("allocatable", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("labels", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("taints", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("unschedulable", sa.Boolean(), nullable=False),
        sa.Column("ready", sa.Boolean(), nullable=False),
        sa.Column("resource_version", sa.BigInteger(), nullable=False),
        sa.Column("relist_id", sa.String(length=64), nullable=True),
        sa.Column("deleted", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_nodes")),
    )
    op.create_table(
        "pod_groups",
        sa.Column("uid", sa.String(length=64), nullable=False),
        sa.Column("namespace", sa.String(length=253), nullable=False),
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("queue", sa.String(length=253), nullable=False),
        sa.Column("min_member", sa.Integer(), nullable=False),
        sa.Column("min_task_member", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("min_resources", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("priority_class", sa.String(length=253), nullable=True),
        sa.Column("phase", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("resource_version", sa.BigInteger(), nullable=False),
        sa.Column("relist_id", sa.String(length=64), nullable=True),
        sa.Column("deleted", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.PrimaryKeyConstraint("uid", name=op.f("pk_pod_groups")),
    )
    op.create_index(op.f("ix_pod_groups_namespace_name"), "pod_groups", ["namespace", "name"], unique=False)
    op.create_table(
        "pods",
        sa.Column("uid", sa.String(length=64), nullable=False),
        sa.Column("namespace", sa.String(length=253), nullable=False),
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("group_name", sa.String(length=253), nullable=True),
        sa.Column("task_role", sa.String(length=253), nullable=True),
        sa.Column("scheduler_name", sa.String(length=253), nullable=True),
        sa.Column("ours", sa.Boolean(), nullable=False),
        sa.Column("request", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("node_name", sa.String(length=253), nullable=True),
        sa.Column("phase", sa.String(length=32), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("priority_class", sa.String(length=253), nullable=True),
        sa.Column("placement", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("resource_version", sa.BigInteger(), nullable=False),
        sa.Column("relist_id", sa.String(length=64), nullable=True),
        sa.Column("deleted", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.PrimaryKeyConstraint("uid", name=op.f("pk_pods")),
    )
    op.create_index(op.f("ix_pods_namespace_group_name"), "pods", ["namespace", "group_name"], unique=False)
    op.create_index(op.f("ix_pods_node_name"), "pods", ["node_name"], unique=False)
    op.create_table(
        "priority_classes",
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("value", sa.Integer(), nullable=False),
        sa.Column("global_default", sa.Boolean(), nullable=False),
        sa.Column("resource_version", sa.BigInteger(), nullable=False),
        sa.Column("relist_id", sa.String(length=64), nullable=True),
        sa.Column("deleted", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_priority_classes")),
    )
    op.create_table(
        "queues",
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("uid", sa.String(length=64), nullable=True),
        sa.Column("weight", sa.Integer(), nullable=False),
        sa.Column("capability", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("guarantee", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("deserved", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("reclaimable", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("parent", sa.String(length=253), nullable=True),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("resource_version", sa.BigInteger(), nullable=False),
        sa.Column("relist_id", sa.String(length=64), nullable=True),
        sa.Column("deleted", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_queues")),
    )
    op.create_table(
        "scheduler_config",
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("conf", sa.Text(), nullable=False),
        sa.Column("resource_version", sa.BigInteger(), nullable=False),
        sa.Column("relist_id", sa.String(length=64), nullable=True),
        sa.Column("deleted", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_scheduler_config")),
    )
    op.create_table(
        "scheduler_leader",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("holder", sa.String(length=253), nullable=False),
        sa.Column("epoch", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scheduler_leader")),
    )
    op.create_table(
        "scheduler_outbox",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("subject", sa.Text(), nullable=False),
        sa.Column("msg_id", sa.String(length=200), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scheduler_outbox")),
    )
    op.create_index(
        "ix_scheduler_outbox_unpublished",
        "scheduler_outbox",
        ["id"],
        unique=False,
        postgresql_where=sa.text("published_at IS NULL"),
    )


def downgrade() -> None:
    op.drop_index(
        "ix_scheduler_outbox_unpublished",
        table_name="scheduler_outbox",
        postgresql_where=sa.text("published_at IS NULL"),
    )
    op.drop_table("scheduler_outbox")
    op.drop_table("scheduler_leader")
    op.drop_table("scheduler_config")
    op.drop_table("queues")
    op.drop_table("priority_classes")
    op.drop_index(op.f("ix_pods_node_name"), table_name="pods")
    op.drop_index(op.f("ix_pods_namespace_group_name"), table_name="pods")
    op.drop_table("pods")
    op.drop_index(op.f("ix_pod_groups_namespace_name"), table_name="pod_groups")
    op.drop_table("pod_groups")
    op.drop_table("nodes")
    op.drop_index(op.f("ix_jobs_namespace_name"), table_name="jobs")
    op.drop_table("jobs")
    op.drop_table("gang_verdicts")
    op.drop_table("gang_fences")
    op.drop_index(
        "ix_decisions_pending", table_name="decisions", postgresql_where=sa.text("state = 'pending'")
    )
    op.drop_index(op.f("ix_decisions_gang_uid"), table_name="decisions")
    op.drop_table("decisions")
    op.drop_index(
        "ix_controller_outbox_unpublished",
        table_name="controller_outbox",
        postgresql_where=sa.text("published_at IS NULL"),
    )
    op.drop_table("controller_outbox")
    op.drop_table("applied_commands")
