"""The activity log: one row per authenticated API request."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from cloudadmin.db.base import Base
from cloudadmin.db.types import BigIntId, UTCDateTime


class ActivityLogEntry(Base):
    __tablename__ = "activity_log"
    __table_args__ = (
        # Listing is "newest first within an account", optionally per user.
        Index("ix_activity_log_client_id_id", "client_id", "id"),
        Index("ix_activity_log_user_id_id", "user_id", "id"),
    )

    # No foreign keys: the log outlives what it mentions and never blocks a request.
    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    actions: Mapped[str] = mapped_column(String(255))
    data: Mapped[str] = mapped_column(Text)
    user_email: Mapped[str] = mapped_column(String(254))
    client_id: Mapped[int] = mapped_column(Integer)
    token_id: Mapped[int | None] = mapped_column(Integer)
    user_id: Mapped[int] = mapped_column(Integer)
    requested_at: Mapped[datetime] = mapped_column(UTCDateTime)
    path: Mapped[str] = mapped_column(String(2048))
    remote_ip_address: Mapped[str] = mapped_column(String(45))
    host: Mapped[str] = mapped_column(String(255))
    method: Mapped[str] = mapped_column(String(10))
    query_params: Mapped[str] = mapped_column(Text)
    status_code: Mapped[int] = mapped_column(Integer)
    reverted: Mapped[bool] = mapped_column(Boolean)
    request_id: Mapped[str] = mapped_column(String(64))
