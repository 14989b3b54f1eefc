"""webhook_subscriptions: user actions POSTed to a subscriber's URL

Beside the AMQP subscriptions, with their own deliveries and dispatcher state
(docs/events.md, "Webhook subscriptions").

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-23 13:45:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from cloudadmin.db.types import UTCDateTime

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BIGINT_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
UTC = UTCDateTime(timezone=True)


def _fk(
    name: str, cols: list[str], target: str, tcols: list[str], ondelete: str | None = None
) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        cols,
        [f"{target}.{c}" for c in tcols],
        name=op.f(name),
        ondelete=ondelete,
        initially="DEFERRED",
        deferrable=True,
    )


def upgrade() -> None:
    op.create_table(
        "webhook_subscriptions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("client_id", sa.Integer(), nullable=False),
        sa.Column("url", sa.String(2048), nullable=False),
        sa.Column("auth_header_name", sa.String(255), nullable=False),
        sa.Column("auth_header_value_encrypted", sa.Text(), nullable=False),
        _fk("fk_webhook_subscriptions_client_id_clients", ["client_id"], "clients", ["id"]),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_subscriptions")),
        sa.UniqueConstraint("client_id", name=op.f("uq_webhook_subscriptions_client_id")),
    )
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", BIGINT_ID, nullable=False),
        sa.Column("event_id", sa.BigInteger(), nullable=False),
        sa.Column("subscription_id", sa.Integer(), nullable=False),
        sa.Column("delivered", sa.Boolean(), nullable=False),
        sa.Column("delivered_at", UTC, nullable=True),
        _fk(
            "fk_webhook_deliveries_event_id_user_action_events",
            ["event_id"],
            "user_action_events",
            ["id"],
            ondelete="CASCADE",
        ),
        _fk(
            "fk_webhook_deliveries_subscription_id_webhook_subscriptions",
            ["subscription_id"],
            "webhook_subscriptions",
            ["id"],
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_webhook_deliveries")),
    )
    op.create_index(op.f("ix_webhook_deliveries_event_id"), "webhook_deliveries", ["event_id"])
    op.create_index(
        "ix_webhook_deliveries_subscription_id_delivered_id",
        "webhook_deliveries",
        ["subscription_id", "delivered", "id"],
    )
    op.create_table(
        "webhook_delivery_states",
        sa.Column("subscription_id", sa.Integer(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", UTC, nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("lease_owner", sa.String(length=64), nullable=True),
        sa.Column("lease_until", UTC, nullable=True),
        _fk(
            "fk_webhook_delivery_states_subscription_id_webhook_subscriptions",
            ["subscription_id"],
            "webhook_subscriptions",
            ["id"],
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("subscription_id", name=op.f("pk_webhook_delivery_states")),
    )


def downgrade() -> None:
    op.drop_table("webhook_delivery_states")
    op.drop_index(
        "ix_webhook_deliveries_subscription_id_delivered_id", table_name="webhook_deliveries"
    )
    op.drop_index(op.f("ix_webhook_deliveries_event_id"), table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
    op.drop_table("webhook_subscriptions")
