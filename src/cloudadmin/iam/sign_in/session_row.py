"""A portal session's row as plain values (db/models/portal.py, ``PortalSession``): what
the session lookups return, read on the driver's connection without an ORM object."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class SessionRow:
    id_hash: str
    user_id: int | None
    seller_id: int | None
    csrf_token: str
    created_at: datetime
    last_seen_at: datetime
