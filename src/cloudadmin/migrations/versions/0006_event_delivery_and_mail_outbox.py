"""event delivery and mail outbox

Revision ID: 0006
Revises: 0002
Create Date: 2026-11-22 03:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

import cloudadmin.db.types

revision: str = "0006"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BIGINT_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
UTC = cloudadmin.db.types.UTCDateTime(timezone=True)
JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def _fk(name: str, cols: list[str], target: str, tcols: list[str]) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        cols,
        [f"{target}.{c}" for c in tcols],
        name=op.f(name),
        ondelete="CASCADE",
        initially="DEFERRED",
        deferrable=True,
    )


def upgrade() -> None:
    op.create_table(
        "event_deliveries",
        sa.Column("id", BIGINT_ID, nullable=False),
        sa.Column("event_id", sa.BigInteger(), nullable=False),
        sa.Column("subscription_id", sa.Integer(), nullable=False),
        sa.Column("delivered", sa.Boolean(), nullable=False),
        sa.Column("delivered_at", UTC, nullable=True),
        _fk(
            "fk_event_deliveries_event_id_user_action_events",
            ["event_id"],
            "user_action_events",
            ["id"],
        ),
        _fk(
            "fk_event_deliveries_subscription_id_amqp_subscriptions",
            ["subscription_id"],
            "amqp_subscriptions",
            ["id"],
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_event_deliveries")),
    )
    op.create_index(op.f("ix_event_deliveries_event_id"), "event_deliveries", ["event_id"])
    op.create_index(
        "ix_event_deliveries_subscription_id_delivered_id",
        "event_deliveries",
        ["subscription_id", "delivered", "id"],
    )
    op.create_table(
        "delivery_states",
        sa.Column("subscription_id", sa.Integer(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", UTC, nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("lease_owner", sa.String(length=64), nullable=True),
        sa.Column("lease_until", UTC, nullable=True),
        _fk(
            "fk_delivery_states_subscription_id_amqp_subscriptions",
            ["subscription_id"],
            "amqp_subscriptions",
            ["id"],
        ),
        sa.PrimaryKeyConstraint("subscription_id", name=op.f("pk_delivery_states")),
    )
    op.create_table(
        "mail_outbox",
        sa.Column("id", BIGINT_ID, nullable=False),
        sa.Column("kind", sa.String(length=30), nullable=False),
        sa.Column("reseller_id", sa.Integer(), nullable=False),
        sa.Column("recipients", JSON, nullable=False),
        sa.Column("subject", sa.String(length=255), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", UTC, nullable=False),
        sa.Column("sent", sa.Boolean(), nullable=False),
        sa.Column("sent_at", UTC, nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", UTC, nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("lease_owner", sa.String(length=64), nullable=True),
        sa.Column("lease_until", UTC, nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mail_outbox")),
    )
    op.create_index(
        "ix_mail_outbox_sent_next_attempt_at", "mail_outbox", ["sent", "next_attempt_at"]
    )
    op.create_table(
        "failed_login_notices",
        sa.Column("key_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("last_sent_at", UTC, nullable=False),
        sa.PrimaryKeyConstraint("key_id", name=op.f("pk_failed_login_notices")),
    )


def downgrade() -> None:
    op.drop_table("failed_login_notices")
    op.drop_index("ix_mail_outbox_sent_next_attempt_at", table_name="mail_outbox")
    op.drop_table("mail_outbox")
    op.drop_table("delivery_states")
    op.drop_index("ix_event_deliveries_subscription_id_delivered_id", table_name="event_deliveries")
    op.drop_index(op.f("ix_event_deliveries_event_id"), table_name="event_deliveries")
    op.drop_table("event_deliveries")
