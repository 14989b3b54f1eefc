"""HTTP webhook subscriptions to user actions, and their share of the outbox.

Beside the AMQP subscriptions, not in their table: a webhook has other settings (a URL
and one secret header), and its own deliveries and dispatcher state, so neither kind's
queries or constraints have to tell the kinds apart. The dispatcher serves both the
same way (docs/events.md).
"""

from __future__ import annotations

from sqlalchemy import Integer
from sqlalchemy.orm import Mapped, mapped_column

from cloudadmin.db.base import Base
from cloudadmin.db.models._fk import fk
from cloudadmin.db.models.events import SubscriptionDeliveries, SubscriptionDeliveryState
from cloudadmin.db.types import IntKey, LongText, Str255, Url


class WebhookSubscription(Base):
    """One per account: user actions are POSTed to ``url`` with one secret header."""

    __tablename__ = "webhook_subscriptions"

    id: Mapped[IntKey]
    client_id: Mapped[int] = mapped_column(Integer, fk("clients.id"), unique=True)
    url: Mapped[Url]
    auth_header_name: Mapped[Str255]
    # The header's value is a credential of the subscriber's: stored encrypted.
    auth_header_value_encrypted: Mapped[LongText]


class WebhookDelivery(SubscriptionDeliveries, Base):
    """One event owed to one webhook subscription."""

    __tablename__ = "webhook_deliveries"
    subscriptions = "webhook_subscriptions"


class WebhookDeliveryState(SubscriptionDeliveryState, Base):
    """Per-webhook dispatcher state."""

    __tablename__ = "webhook_delivery_states"
    subscriptions = "webhook_subscriptions"
