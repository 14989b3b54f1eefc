"""Sellers: sales people of a reseller with access to its admin panel."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, Index, Integer, String, func
from sqlalchemy.orm import Mapped, mapped_column

from cloudadmin.db.base import Base
from cloudadmin.db.models._fk import fk
from cloudadmin.db.types import UTCDateTime, utcnow


class Seller(Base):
    __tablename__ = "sellers"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    email: Mapped[str] = mapped_column(String(150))
    full_name: Mapped[str] = mapped_column(String(255))
    phone: Mapped[str | None] = mapped_column(String(30))
    company: Mapped[str | None] = mapped_column(String(255))
    reseller_id: Mapped[int] = mapped_column(Integer, fk("clients.id"), index=True)
    date_joined: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    activated: Mapped[bool] = mapped_column(Boolean, default=False)
    deleted: Mapped[bool] = mapped_column(Boolean, default=False)


# E-mail addresses are unique regardless of letter case.
Index("uq_sellers_email_lower", func.lower(Seller.email), unique=True)
