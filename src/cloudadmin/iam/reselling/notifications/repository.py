"""Notification setting queries, scoped to one reseller."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import NotificationSetting


async def count(session: AsyncSession, reseller_id: int) -> int:
    stmt = select(func.count()).select_from(NotificationSetting).where(
        NotificationSetting.reseller_id == reseller_id
    )
    return int((await session.execute(stmt)).scalar_one())


async def page(
    session: AsyncSession, reseller_id: int, order_by: list[Any], *, limit: int | None,
    offset: int,
) -> list[NotificationSetting]:
    stmt = (
        select(NotificationSetting)
        .where(NotificationSetting.reseller_id == reseller_id)
        .order_by(*order_by)
        .offset(offset)
    )
    if limit is not None:
        stmt = stmt.limit(limit)
    return list((await session.execute(stmt)).scalars().all())


async def get(
    session: AsyncSession, reseller_id: int, setting_id: int, *, for_change: bool = False
) -> NotificationSetting | None:
    """``for_change``: the row stays locked until the transaction ends (PostgreSQL; SQLite
    runs one writer at a time). A concurrent change waits, then finds the row as that
    one left it: gone after a DELETE, so exactly one DELETE wins (issue 13)."""
    stmt = select(NotificationSetting).where(
        NotificationSetting.id == setting_id, NotificationSetting.reseller_id == reseller_id
    )
    if for_change:
        stmt = stmt.with_for_update().execution_options(populate_existing=True)
    return (await session.execute(stmt)).scalar_one_or_none()
