"""A reseller's branding settings and notification settings."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from cloudadmin.db.base import Base
from cloudadmin.db.models._fk import AccountRef, fk
from cloudadmin.db.types import (
    Email,
    FalseByDefault,
    IntKey,
    JSONType,
    LongText,
    Str255,
    TrueByDefault,
)


class Branding(Base):
    __tablename__ = "branding"

    reseller_id: Mapped[int] = mapped_column(Integer, fk("clients.id"), primary_key=True)
    domain: Mapped[str] = mapped_column(String(255), default="")
    public_settings: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    # mailServer without its password; the password is kept encrypted beside it.
    mail_server: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    mail_password_encrypted: Mapped[LongText | None]
    logo_path: Mapped[Str255 | None]
    favicon_path: Mapped[Str255 | None]
    deleted: Mapped[FalseByDefault]


class NotificationSetting(Base):
    __tablename__ = "notification_settings"

    id: Mapped[IntKey]
    reseller_id: Mapped[AccountRef]
    notification_type: Mapped[str] = mapped_column(String(30))
    email: Mapped[Email]
    enabled: Mapped[TrueByDefault]
