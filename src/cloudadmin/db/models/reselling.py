"""A reseller's branding settings and notification settings."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Boolean, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from cloudadmin.db.base import Base
from cloudadmin.db.models._fk import fk
from cloudadmin.db.types import JSONType


class Branding(Base):
    __tablename__ = "branding"

    reseller_id: Mapped[int] = mapped_column(Integer, fk("clients.id"), primary_key=True)
    domain: Mapped[str] = mapped_column(String(255), default="")
    public_settings: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    # mailServer without its password; the password is kept encrypted beside it.
    mail_server: Mapped[dict[str, Any]] = mapped_column(JSONType, default=dict)
    mail_password_encrypted: Mapped[str | None] = mapped_column(Text)
    logo_path: Mapped[str | None] = mapped_column(String(255))
    favicon_path: Mapped[str | None] = mapped_column(String(255))
    deleted: Mapped[bool] = mapped_column(Boolean, default=False)


class NotificationSetting(Base):
    __tablename__ = "notification_settings"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    reseller_id: Mapped[int] = mapped_column(Integer, fk("clients.id"), index=True)
    notification_type: Mapped[str] = mapped_column(String(30))
    email: Mapped[str] = mapped_column(String(254))
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
