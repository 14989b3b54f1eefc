"""What a signed-in user changes of itself in a console (docs/portal.md, "Profile"): its
password (the current one required; the API's password rules; every other session
ends), and the list of its sessions."""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.config import Settings
from cloudadmin.db.models import PortalSession, User
from cloudadmin.db.types import utcnow
from cloudadmin.errors import ValidationError
from cloudadmin.iam.sign_in import sessions
from cloudadmin.iam.users.service import check_password
from cloudadmin.kit.crypto import hash_password, verify_password

WRONG_CURRENT = "The current password is wrong."


class WrongPassword(ValidationError):
    """The current password given is not the user's (counted as a failed
    authentication: a session left open is no way to guess the password)."""


async def verify_own_password(db: AsyncSession, user_id: int, password: str) -> bool:
    user = await db.get(User, user_id)
    stored = user.password_hash if user is not None else None
    if not stored:
        return False
    return await asyncio.to_thread(verify_password, stored, password)


async def change_password(
    db: AsyncSession, user_id: int, current: str, new: str, *, keep_session: str | None
) -> int:
    """Sets the user's new password (argon2id) when ``current`` is its password and
    ``new`` passes the API's rules (users.service.check_password: messages under
    ``password``); every session of the user but ``keep_session`` ends (how many)."""
    user = await db.get(User, user_id, with_for_update=True)
    assert user is not None  # a signed-in user
    if not await verify_own_password(db, user_id, current):
        raise WrongPassword.field("current_password", WRONG_CURRENT)
    check_password(new, user.email)
    user.password_hash = await asyncio.to_thread(hash_password, new)
    await db.flush()
    return await sessions.end_other_sessions(db, user_id, keep_session)


@dataclass(frozen=True, slots=True)
class SessionView:
    created_at: datetime
    last_seen_at: datetime
    current: bool


async def sessions_of(
    db: AsyncSession, user_id: int, current: str, settings: Settings
) -> list[SessionView]:
    """The user's live sessions, newest first; ``current`` (the request's cookie) marks
    its own. A row past its idle timeout or lifetime (deleted at its next use) is not
    listed."""
    own = hashlib.sha256(current.encode()).hexdigest()
    now = utcnow()
    idle = timedelta(minutes=settings.portal_session_idle_minutes)
    lifetime = timedelta(hours=settings.portal_session_lifetime_hours)
    rows = (
        await db.execute(
            select(PortalSession)
            .where(PortalSession.user_id == user_id)
            .order_by(PortalSession.created_at.desc())
        )
    ).scalars()
    return [
        SessionView(r.created_at, r.last_seen_at, r.id_hash == own)
        for r in rows
        if now - r.last_seen_at <= idle and now - r.created_at <= lifetime
    ]
