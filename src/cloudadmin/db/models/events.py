"""The transactional outbox of user-action events."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import BigInteger, Boolean, Index, Integer, String, false
from sqlalchemy.orm import Mapped, declared_attr, mapped_column, relationship

from cloudadmin.db.base import Base
from cloudadmin.db.models._fk import fk
from cloudadmin.db.types import (
    BigIntKey,
    FalseByDefault,
    GivenIntKey,
    JSONType,
    LongText,
    Str255,
    UTCDateTime,
)


class UserActionEvent(Base):
    """One user action, written in the same transaction as the change it describes,
    so it exists if and only if that change committed.

    ``body`` is the user-action record (docs/events.md) except ``acknowledged``, which
    is the row's own state; the columns beside it are copies of the record's fields
    that GET /cloud/v1/user_actions filters on.
    """

    __tablename__ = "user_action_events"
    __table_args__ = (
        Index("ix_user_action_events_client_id_id", "client_id", "id"),
        # The log's reads: one account's actions, or everyone's, in time order.
        Index("ix_user_action_events_client_id_created_at_id", "client_id", "created_at", "id"),
        Index("ix_user_action_events_created_at_id", "created_at", "id"),
    )

    id: Mapped[BigIntKey]
    event_id: Mapped[str] = mapped_column(String(36), unique=True)
    # The account the action concerns, and its reseller then (for child fan-out).
    client_id: Mapped[int]
    reseller_id: Mapped[int | None]
    body: Mapped[dict[str, Any]] = mapped_column(JSONType)
    created_at: Mapped[datetime]
    user_id: Mapped[int | None]
    action_type: Mapped[str] = mapped_column(String(50), server_default="")
    api_group: Mapped[str] = mapped_column(String(50), server_default="")
    project_id: Mapped[int | None]
    region_id: Mapped[int | None]
    source_user_ip: Mapped[str | None] = mapped_column(String(64))
    user_agent: Mapped[str | None] = mapped_column(String(512))
    # Every subscription owed the event has confirmed it (false when none was owed).
    acknowledged: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    resources: Mapped[list[UserActionResource]] = relationship(
        lazy="raise",
        cascade="all, delete-orphan",
        passive_deletes=True,
        order_by="UserActionResource.id",
    )


class UserActionResource(Base):
    """A resource an action concerns (the record's ``resources``), for its filters."""

    __tablename__ = "user_action_resources"

    id: Mapped[BigIntKey]
    event_id: Mapped[int] = mapped_column(
        BigInteger, fk("user_action_events.id", ondelete="CASCADE"), index=True
    )
    resource_type: Mapped[str] = mapped_column(String(64))
    resource_id: Mapped[str] = mapped_column(String(255), index=True)
    search_field: Mapped[Str255 | None]


class SubscriptionDeliveries:
    """One event owed to one subscription of the table ``subscriptions``: the AMQP and
    the webhook subscriptions each have their own table of these, of one shape, which
    the dispatcher serves the same way."""

    __tablename__: str
    subscriptions: ClassVar[str]

    @declared_attr.directive
    def __table_args__(cls) -> tuple[Index]:
        # The dispatcher reads a subscription's undelivered events in id order.
        name = f"ix_{cls.__tablename__}_subscription_id_delivered_id"
        return (Index(name, "subscription_id", "delivered", "id"),)

    id: Mapped[BigIntKey]
    event_id: Mapped[int] = mapped_column(
        BigInteger, fk("user_action_events.id", ondelete="CASCADE"), index=True
    )

    # A declared_attr column would come last; sort_order keeps the tables' column order
    # (the migrations') in a CREATE TABLE from the models.
    @declared_attr
    def subscription_id(cls) -> Mapped[int]:
        return mapped_column(Integer, fk(f"{cls.subscriptions}.id", ondelete="CASCADE"))

    delivered: Mapped[bool] = mapped_column(Boolean, default=False, sort_order=1)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime, sort_order=1)


class SubscriptionDeliveryState:
    """Per-subscription dispatcher state, for the subscriptions of the table
    ``subscriptions``: who holds it, and when to try again."""

    subscriptions: ClassVar[str]

    @declared_attr
    def subscription_id(cls) -> Mapped[int]:
        return mapped_column(
            Integer,
            fk(f"{cls.subscriptions}.id", ondelete="CASCADE"),
            primary_key=True,
            sort_order=-1,  # first, as in the migrations
        )

    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None]
    last_error: Mapped[LongText | None]
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    lease_until: Mapped[datetime | None]
    # Its destination went a while without taking a message: served by at most half of
    # a dispatcher's lanes (events/lanes.py, SlowLanes).
    slow: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class EventDelivery(SubscriptionDeliveries, Base):
    """One event owed to one AMQP subscription; the fan-out is fixed when the event is
    written."""

    __tablename__ = "event_deliveries"
    subscriptions = "amqp_subscriptions"


class DeliveryState(SubscriptionDeliveryState, Base):
    """Per-subscription dispatcher state of the AMQP subscriptions."""

    __tablename__ = "delivery_states"
    subscriptions = "amqp_subscriptions"


class MailMessage(Base):
    """An e-mail in the outbox, sent through the reseller's own mail server."""

    __tablename__ = "mail_outbox"
    __table_args__ = (Index("ix_mail_outbox_sent_next_attempt_at", "sent", "next_attempt_at"),)

    id: Mapped[BigIntKey]
    kind: Mapped[str] = mapped_column(String(30))
    reseller_id: Mapped[int]
    recipients: Mapped[list[str]] = mapped_column(JSONType)
    subject: Mapped[Str255]
    body: Mapped[LongText]
    created_at: Mapped[datetime]
    sent: Mapped[FalseByDefault]
    sent_at: Mapped[datetime | None]
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime]
    last_error: Mapped[LongText | None]
    lease_owner: Mapped[str | None] = mapped_column(String(64))
    lease_until: Mapped[datetime | None]


class FailedLoginNotice(Base):
    """When a failed-login mail was last queued for a key (at most one per 10 minutes)."""

    __tablename__ = "failed_login_notices"

    key_id: Mapped[GivenIntKey]
    last_sent_at: Mapped[datetime]
