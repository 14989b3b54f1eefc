"""The transactional outbox of user-action events."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from cloudadmin.db.base import Base
from cloudadmin.db.types import BigIntId, JSONType, UTCDateTime


class UserActionEvent(Base):
    """One user action, written in the same transaction as the change it describes,
    so it exists if and only if that change committed."""

    __tablename__ = "user_action_events"
    __table_args__ = (Index("ix_user_action_events_client_id_id", "client_id", "id"),)

    id: Mapped[int] = mapped_column(BigIntId, primary_key=True)
    event_id: Mapped[str] = mapped_column(String(36), unique=True)
    # The account the action concerns, and its reseller then (for child fan-out).
    client_id: Mapped[int] = mapped_column(Integer)
    reseller_id: Mapped[int | None] = mapped_column(Integer)
    body: Mapped[dict[str, Any]] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
