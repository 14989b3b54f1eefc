"""Sellers: sales people of a reseller with access to its admin panel."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Index, String, func
from sqlalchemy.orm import Mapped, mapped_column

from cloudadmin.db.base import Base
from cloudadmin.db.models._fk import AccountRef
from cloudadmin.db.types import FalseByDefault, IntKey, LongText, Str255, UTCDateTime, utcnow


class Seller(Base):
    __tablename__ = "sellers"

    id: Mapped[IntKey]
    email: Mapped[str] = mapped_column(String(150))
    full_name: Mapped[Str255]
    phone: Mapped[str | None] = mapped_column(String(30))
    company: Mapped[Str255 | None]
    reseller_id: Mapped[AccountRef]
    date_joined: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    activated: Mapped[FalseByDefault]
    deleted: Mapped[FalseByDefault]
    # The Admin Portal (docs/access.md, "The Admin Portal: sellers"): the argon2id hash of
    # the password set through the invitation's link (None until then); a blocked seller
    # may neither sign in nor set a password until its reseller activates it again; when
    # the last invitation or password-reset mail was queued.
    password_hash: Mapped[LongText | None]
    blocked: Mapped[FalseByDefault]
    invited_at: Mapped[datetime | None] = mapped_column(UTCDateTime)


# E-mail addresses are unique regardless of letter case.
Index("uq_sellers_email_lower", func.lower(Seller.email), unique=True)
