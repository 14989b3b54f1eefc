"""API keys from the command line (`cloudadmin apikey create|list|revoke`).

The CLI acts as the operator; it uses the service code of the API tokens (service.py),
so a key made or revoked here is the same as through the API.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.config import Settings
from cloudadmin.db.engine import create_engine, create_sessionmaker
from cloudadmin.db.models import User
from cloudadmin.db.types import utcnow
from cloudadmin.iam.api_tokens import repository
from cloudadmin.iam.api_tokens.service import issue_key, revoke_key
from cloudadmin.kit.timeparse import isoformat_z

T = TypeVar("T")


async def _in_transaction(settings: Settings, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
    engine = create_engine(settings)
    try:
        async with create_sessionmaker(engine)() as session, session.begin():
            return await work(session)
    finally:
        await engine.dispose()


async def create_key(
    settings: Settings,
    *,
    user_id: int,
    name: str | None = None,
    expires_at: datetime | None = None,
) -> str:
    """Stores a new key for the user and returns ``<id>_<secret>``, shown only once."""

    async def work(session: AsyncSession) -> str:
        user = (
            await session.execute(select(User).where(User.id == user_id, User.deleted.is_(False)))
        ).scalar_one_or_none()
        if user is None:
            raise LookupError(f"no user with id {user_id}")
        _, token = await issue_key(session, user, name=name, expires_at=expires_at)
        return token

    return await _in_transaction(settings, work)


@dataclass(frozen=True, slots=True)
class KeyLine:
    """What `apikey list` shows of a key: never its secret, nor its hash."""

    id: int
    user_id: int
    user_email: str
    name: str | None
    created: datetime
    expires: datetime | None
    last_usage: datetime | None
    state: str  # active, expired or revoked


async def list_keys(settings: Settings, *, user_id: int | None = None) -> list[KeyLine]:
    async def work(session: AsyncSession) -> list[KeyLine]:
        now = utcnow()
        return [
            KeyLine(
                id=key.id,
                user_id=user.id,
                user_email=user.email,
                name=key.name,
                created=key.created_at,
                expires=key.expires_at,
                last_usage=key.last_usage,
                state="revoked"
                if key.revoked
                else "expired"
                if key.expires_at is not None and key.expires_at <= now
                else "active",
            )
            for key, user in await repository.list_all(session, user_id)
        ]

    return await _in_transaction(settings, work)


async def revoke(settings: Settings, key_id: int) -> bool:
    """Revokes the key; False when it was revoked already. LookupError when unknown."""

    async def work(session: AsyncSession) -> bool:
        key = await repository.get_any(session, key_id)
        if key is None:
            raise LookupError(f"no API key with id {key_id}")
        return await revoke_key(session, key)

    return await _in_transaction(settings, work)


def format_table(lines: list[KeyLine]) -> list[str]:
    """Aligned columns, one key a line, times in UTC to the minute ("-": none)."""

    def when(value: datetime | None) -> str:
        return isoformat_z(value.replace(second=0, microsecond=0)) if value else "-"

    rows = [("ID", "USER", "NAME", "CREATED", "EXPIRES", "LAST USE", "STATE")]
    rows += [
        (
            str(k.id),
            f"{k.user_id} {k.user_email}",
            k.name or "-",
            when(k.created),
            when(k.expires),
            when(k.last_usage),
            k.state,
        )
        for k in lines
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]
