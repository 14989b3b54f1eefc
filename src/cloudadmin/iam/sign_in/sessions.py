"""The portal's sign-in sessions, kept in the database (docs/portal.md, "Sessions").

The browser's cookie holds a random id; the row is found by its SHA-256, so the table
alone signs no one in. A session ends when it has been idle longer than
``portal_session_idle_minutes``, when it is older than ``portal_session_lifetime_hours``,
or when it is signed out. Services flush, the route's transaction commits.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from sqlalchemy import bindparam, delete, select, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from cloudadmin.config import Settings
from cloudadmin.db import driver
from cloudadmin.db.models.portal import PortalSession
from cloudadmin.db.types import utcnow
from cloudadmin.iam.sign_in.credentials import PortalUser
from cloudadmin.iam.sign_in.session_row import SessionRow

# A session's last use is written again once it is this old (see _touch_interval).
TOUCH_INTERVAL = timedelta(minutes=1)


def digest(session_id: str) -> str:
    """The key of the session a cookie's id names."""
    return hashlib.sha256(session_id.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Started:
    """A new session: the id for the cookie (never stored) and its CSRF token."""

    session_id: str
    csrf_token: str


async def start(db: AsyncSession, user: PortalUser) -> Started:
    """A new session of the user, or of the seller (``user.seller_id``)."""
    session_id = secrets.token_urlsafe(32)
    csrf_token = secrets.token_urlsafe(32)
    now = utcnow()
    db.add(
        PortalSession(
            id_hash=digest(session_id),
            user_id=None if user.seller_id is not None else user.user_id,
            seller_id=user.seller_id,
            csrf_token=csrf_token,
            created_at=now,
            last_seen_at=now,
        )
    )
    await db.flush()
    return Started(session_id, csrf_token)


def _expired(row: SessionRow, settings: Settings, now: datetime) -> bool:
    idle = timedelta(minutes=settings.portal_session_idle_minutes)
    lifetime = timedelta(hours=settings.portal_session_lifetime_hours)
    return now - row.last_seen_at > idle or now - row.created_at > lifetime


def _touch_interval(settings: Settings) -> timedelta:
    """How stale ``last_seen_at`` may be before a request writes it again: a minute, or
    less under a shorter idle timeout. Most pages then write nothing at all."""
    return min(TOUCH_INTERVAL, timedelta(minutes=settings.portal_session_idle_minutes) / 4)


# The session's columns, in SessionRow's order: the lookups unpack them by position.
SESSION_COLUMNS = (
    PortalSession.id_hash,
    PortalSession.user_id,
    PortalSession.seller_id,
    PortalSession.csrf_token,
    PortalSession.created_at,
    PortalSession.last_seen_at,
)
_SESSION = driver.Static(
    select(*SESSION_COLUMNS).where(PortalSession.id_hash == bindparam("id_hash"))
)


async def kept(conn: AsyncConnection, row: SessionRow, settings: Settings) -> SessionRow | None:
    """The session if it is still live, its use noted (at most once per
    ``_touch_interval``); an expired one is deleted. Statements of their own on the
    request's connection: a page that only reads runs without a transaction
    (portal/context.py), and each of these commits on its own there."""
    now = utcnow()
    if _expired(row, settings, now):
        await conn.execute(delete(PortalSession).where(PortalSession.id_hash == row.id_hash))
        return None
    if now - row.last_seen_at >= _touch_interval(settings):
        await conn.execute(
            update(PortalSession)
            .where(PortalSession.id_hash == row.id_hash)
            .values(last_seen_at=now)
        )
        row = replace(row, last_seen_at=now)
    return row


async def current(
    db: AsyncSession, session_id: str | None, settings: Settings
) -> SessionRow | None:
    """The live session the cookie names (``kept``)."""
    if not session_id:
        return None
    conn = await db.connection()
    rows = await driver.fetch(conn, _SESSION, {"id_hash": digest(session_id)})
    if not rows:
        return None
    return await kept(conn, SessionRow(*rows[0]), settings)


def csrf_valid(row: SessionRow, presented: str | None) -> bool:
    return bool(presented) and hmac.compare_digest(row.csrf_token, presented or "")


async def end(db: AsyncSession, session_id: str) -> None:
    """Signing out: the session's row is deleted."""
    await db.execute(delete(PortalSession).where(PortalSession.id_hash == digest(session_id)))


async def end_other_sessions(db: AsyncSession, user_id: int, keep: str | None) -> int:
    """Ends every session of the user but ``keep`` (a cookie's session id; None: all of
    them). For a password change and "sign out the others"; how many ended."""
    rows = select(PortalSession.id_hash).where(PortalSession.user_id == user_id)
    if keep is not None:
        rows = rows.where(PortalSession.id_hash != digest(keep))
    ended = list((await db.execute(rows)).scalars())
    if ended:
        await db.execute(delete(PortalSession).where(PortalSession.id_hash.in_(ended)))
    return len(ended)


async def end_seller_sessions(db: AsyncSession, seller_id: int) -> int:
    """Ends every session of the seller (a new password set through a link, a block, a
    deletion); how many ended."""
    ended = await db.execute(delete(PortalSession).where(PortalSession.seller_id == seller_id))
    return int(getattr(ended, "rowcount", 0) or 0)
