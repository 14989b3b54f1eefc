"""user action outbox

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 03:17:38.831304
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import cloudadmin.db.types

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "user_action_events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("event_id", sa.String(length=36), nullable=False),
        sa.Column("client_id", sa.Integer(), nullable=False),
        sa.Column("reseller_id", sa.Integer(), nullable=True),
        sa.Column(
            "body",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", cloudadmin.db.types.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_user_action_events")),
        sa.UniqueConstraint("event_id", name=op.f("uq_user_action_events_event_id")),
    )
    with op.batch_alter_table("user_action_events", schema=None) as batch_op:
        batch_op.create_index(
            "ix_user_action_events_client_id_id", ["client_id", "id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("user_action_events", schema=None) as batch_op:
        batch_op.drop_index("ix_user_action_events_client_id_id")

    op.drop_table("user_action_events")
