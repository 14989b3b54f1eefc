"""API token queries: always within one account the caller may see (checked first)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import ApiKey, User


@dataclass(frozen=True, slots=True)
class TokenFilter:
    role_id: int | None = None
    issued_by: int | None = None
    not_issued_by: int | None = None
    deleted: bool = False
    # Members see only the tokens they issued.
    only_user_id: int | None = None


def _in_account(client_id: int) -> Select[ApiKey, User]:
    return (
        select(ApiKey, User)
        .join(User, User.id == ApiKey.user_id)
        .where(User.client_id == client_id)
    )


async def list_tokens(
    session: AsyncSession, client_id: int, flt: TokenFilter
) -> list[tuple[ApiKey, User]]:
    stmt = _in_account(client_id).where(ApiKey.revoked.is_(flt.deleted))
    if flt.role_id is not None:
        stmt = stmt.where(ApiKey.role_id == flt.role_id)
    if flt.issued_by is not None:
        stmt = stmt.where(ApiKey.user_id == flt.issued_by)
    if flt.not_issued_by is not None:
        stmt = stmt.where(ApiKey.user_id != flt.not_issued_by)
    if flt.only_user_id is not None:
        stmt = stmt.where(ApiKey.user_id == flt.only_user_id)
    rows = (await session.execute(stmt.order_by(ApiKey.id))).all()
    return [(key, user) for key, user in rows]


async def get_token(
    session: AsyncSession, client_id: int, token_id: int, *, for_update: bool = False
) -> tuple[ApiKey, User] | None:
    stmt = _in_account(client_id).where(ApiKey.id == token_id)
    if for_update:
        stmt = stmt.with_for_update(of=ApiKey)
    row = (await session.execute(stmt)).first()
    return (row[0], row[1]) if row is not None else None


async def list_all(session: AsyncSession, user_id: int | None = None) -> list[tuple[ApiKey, User]]:
    """Every key of every account (or of one user), by id: the operator's view."""
    stmt = select(ApiKey, User).join(User, User.id == ApiKey.user_id)
    if user_id is not None:
        stmt = stmt.where(ApiKey.user_id == user_id)
    rows = (await session.execute(stmt.order_by(ApiKey.id))).all()
    return [(key, user) for key, user in rows]


async def get_any(session: AsyncSession, key_id: int) -> ApiKey | None:
    stmt = select(ApiKey).where(ApiKey.id == key_id).with_for_update()
    return (await session.execute(stmt)).scalar_one_or_none()
