"""The activity log: one row per authenticated API request."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from cloudadmin.db.base import Base
from cloudadmin.db.types import BigIntKey, Email, LongText, Str255, Url


class ActivityLogEntry(Base):
    __tablename__ = "activity_log"
    __table_args__ = (
        # Listing is "newest first within an account", optionally per user.
        Index("ix_activity_log_client_id_id", "client_id", "id"),
        Index("ix_activity_log_user_id_id", "user_id", "id"),
    )

    # No foreign keys: the log outlives what it mentions and never blocks a request.
    id: Mapped[BigIntKey]
    actions: Mapped[Str255]
    data: Mapped[LongText]
    user_email: Mapped[Email]
    client_id: Mapped[int]
    token_id: Mapped[int | None]
    user_id: Mapped[int]
    requested_at: Mapped[datetime]
    path: Mapped[Url]
    remote_ip_address: Mapped[str] = mapped_column(String(45))
    host: Mapped[Str255]
    method: Mapped[str] = mapped_column(String(10))
    query_params: Mapped[LongText]
    status_code: Mapped[int]
    reverted: Mapped[bool] = mapped_column(Boolean)
    request_id: Mapped[str] = mapped_column(String(64))
