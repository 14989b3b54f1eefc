"""The Admin Portal's sign-in sessions and failed sign-in notices (docs/portal.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import CheckConstraint, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from cloudadmin.db.base import Base
from cloudadmin.db.models._fk import fk
from cloudadmin.db.types import JSONType, UTCDateTime, utcnow


class PortalSession(Base):
    """One signed-in browser. The cookie holds a random id; only its SHA-256 is kept, so
    a copy of this table signs no one in. It signs in a user or a seller (sellers are not
    users): exactly one of ``user_id`` and ``seller_id`` is set."""

    __tablename__ = "portal_sessions"
    __table_args__ = (
        CheckConstraint("(user_id IS NULL) <> (seller_id IS NULL)", name="one_person"),
    )

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int | None] = mapped_column(
        Integer, fk("users.id", ondelete="CASCADE"), index=True
    )
    seller_id: Mapped[int | None] = mapped_column(
        Integer, fk("sellers.id", ondelete="CASCADE"), index=True
    )
    # The token every state-changing request of the session carries (form field or
    # X-CSRF-Token header).
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class PortalFailedSignInNotice(Base):
    """When a failed sign-in as this user was last mailed to its reseller: at most one
    mail per user per interval, as ``failed_login_notices`` does per API key."""

    __tablename__ = "portal_failed_sign_in_notices"

    user_id: Mapped[int] = mapped_column(
        Integer, fk("users.id", ondelete="CASCADE"), primary_key=True
    )
    last_sent_at: Mapped[datetime] = mapped_column(UTCDateTime)


class PortalPreference(Base):
    """What one person chose to keep in the portal (saved filter presets, the columns of
    a table), by name: a JSON value. ``principal`` names the person: ``user:<id>`` or
    ``seller:<id>`` (sellers sign in too, and are not users)."""

    __tablename__ = "portal_preferences"

    principal: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[Any] = mapped_column(JSONType)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
