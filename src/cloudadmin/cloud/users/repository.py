"""The live users of one account."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.filters import count_rows
from cloudadmin.db.models import User


async def list_of_account(
    session: AsyncSession, account_id: int, *, user_id: int | None, limit: int, offset: int
) -> tuple[int, Sequence[User]]:
    conds = [User.client_id == account_id, User.deleted.is_(False)]
    if user_id is not None:
        conds.append(User.id == user_id)
    count = await count_rows(session, User, *conds)
    rows = await session.execute(
        select(User).where(*conds).order_by(User.id).limit(limit).offset(offset)
    )
    return count, rows.scalars().all()
