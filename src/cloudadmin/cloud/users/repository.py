"""The live users of one account."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.filters import count_rows, sliced
from cloudadmin.db.models import User
from cloudadmin.kit.pagination import Paging


async def list_of_account(
    session: AsyncSession, account_id: int, page: Paging, *, user_id: int | None
) -> tuple[int, Sequence[User]]:
    conds = [User.client_id == account_id, User.deleted.is_(False)]
    if user_id is not None:
        conds.append(User.id == user_id)
    count = await count_rows(session, User, *conds)
    rows = await session.execute(sliced(select(User).where(*conds).order_by(User.id), page))
    return count, rows.scalars().all()
