"""tasks: the cloud API's asynchronous tasks (the v2 listener change, GET /cloud/v1/tasks)

A change that answers a task writes one here and sets the resource's lock (its
``task_id``); the task ends FINISHED or ERROR, and one whose process died is settled by
the next pass (docs/cloud.md, "Tasks").

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-28 00:50:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

from cloudadmin.db.types import UTCDateTime

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(JSONB(), "postgresql")


def upgrade() -> None:
    op.create_table(
        "tasks",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("task_type", sa.String(64), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("client_id", sa.Integer(), nullable=True),
        sa.Column("user_client_id", sa.Integer(), nullable=True),
        sa.Column("project_id", sa.Integer(), nullable=True),
        sa.Column("region_id", sa.Integer(), nullable=True),
        sa.Column("resource_id", sa.String(36), nullable=True),
        sa.Column("data", _JSON, nullable=True),
        sa.Column("created_resources", _JSON, nullable=True),
        sa.Column("detailed_state", sa.String(32), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("request_id", sa.String(64), nullable=True),
        sa.Column("job_id", sa.String(36), nullable=True),
        sa.Column("lifecycle_policy_id", sa.Integer(), nullable=True),
        sa.Column("schedule_id", sa.String(36), nullable=True),
        sa.Column("created_on", UTCDateTime(), nullable=False),
        sa.Column("updated_on", UTCDateTime(), nullable=True),
        sa.Column("finished_on", UTCDateTime(), nullable=True),
        sa.Column("acknowledged_at", UTCDateTime(), nullable=True),
        sa.Column("acknowledged_by", sa.Integer(), nullable=True),
        sa.Column("lease_expires_at", UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_tasks"),
    )
    op.create_index("ix_tasks_client_id_created_on_id", "tasks", ["client_id", "created_on", "id"])
    op.create_index("ix_tasks_created_on_id", "tasks", ["created_on", "id"])
    op.create_index("ix_tasks_state_lease_expires_at", "tasks", ["state", "lease_expires_at"])


def downgrade() -> None:
    op.drop_table("tasks")
