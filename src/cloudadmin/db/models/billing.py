"""Billing addendums."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from cloudadmin.db.base import Base
from cloudadmin.db.models._fk import fk
from cloudadmin.db.types import BigIntId, UTCDateTime


class Addendum(Base):
    __tablename__ = "addendums"

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    client_id: Mapped[int] = mapped_column(Integer, fk("clients.id"), index=True)
    payer_id: Mapped[int | None] = mapped_column(BigInteger)
    provider_id: Mapped[int | None] = mapped_column(BigInteger)
    reseller_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    status: Mapped[str] = mapped_column(String(10))
    active_start: Mapped[datetime] = mapped_column(UTCDateTime)
    active_end: Mapped[datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    currency_id: Mapped[int] = mapped_column(Integer)
    currency_char_code: Mapped[str] = mapped_column(String(3))
    currency_symbol: Mapped[str] = mapped_column(String(5))
    plan_id: Mapped[int] = mapped_column(Integer)
    plan_name: Mapped[str] = mapped_column(String(255))
    product_id: Mapped[int] = mapped_column(Integer)
    product_name: Mapped[str] = mapped_column(String(255))
    product_internal_name: Mapped[str] = mapped_column(String(50))
