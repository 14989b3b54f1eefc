"""The Admin Portal's sign-in sessions (docs/portal.md)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from cloudadmin.db.base import Base
from cloudadmin.db.models._fk import fk
from cloudadmin.db.types import UTCDateTime, utcnow


class PortalSession(Base):
    """One signed-in browser. The cookie holds a random id; only its SHA-256 is kept, so
    a copy of this table signs no one in."""

    __tablename__ = "portal_sessions"

    id_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[int] = mapped_column(Integer, fk("users.id", ondelete="CASCADE"), index=True)
    # The token every state-changing request of the session carries (form field or
    # X-CSRF-Token header).
    csrf_token: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    last_seen_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
