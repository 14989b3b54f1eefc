"""HTTP webhook subscriptions to user actions, and their share of the outbox.

Beside the AMQP subscriptions, not in their table: a webhook has other settings (a URL
and one secret header), and its own deliveries and dispatcher state, so neither kind's
queries or constraints have to tell the kinds apart. The dispatcher serves both the
same way (docs/events.md).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Boolean, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from cloudadmin.db.base import Base
from cloudadmin.db.models._fk import fk
from cloudadmin.db.types import BigIntId, UTCDateTime


class WebhookSubscription(Base):
    """One per account: user actions are POSTed to ``url`` with one secret header."""

    __tablename__ = "webhook_subscriptions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    client_id: Mapped[int] = mapped_column(Integer, fk("clients.id"), unique=True)
    url: Mapped[str] = mapped_column(String(2048))
    auth_header_name: Mapped[str] = mapped_column(String(255))
    # The header's value is a credential of the subscriber's: stored encrypted.
    auth_header_value_encrypted: Mapped[str] = mapped_column(Text)


class WebhookDelivery(Base):
    """One event owed to one webhook subscription (as EventDelivery for AMQP)."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        Index("ix_webhook_deliveries_subscription_id_delivered_id",
              "subscription_id", "delivered", "id"),
    )

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    event_id: Mapped[int] = mapped_column(
        BigInteger, fk("user_action_events.id", ondelete="CASCADE"), index=True
    )
    subscription_id: Mapped[int] = mapped_column(
        Integer, fk("webhook_subscriptions.id", ondelete="CASCADE")
    )
    delivered: Mapped[bool] = mapped_column(Boolean, default=False)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


class WebhookDeliveryState(Base):
    """Per-webhook dispatcher state (as DeliveryState for AMQP)."""

    __tablename__ = "webhook_delivery_states"

    subscription_id: Mapped[int] = mapped_column(
        Integer, fk("webhook_subscriptions.id", ondelete="CASCADE"), primary_key=True
    )
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    last_error: Mapped[str | None] = mapped_column(Text)
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime)
