"""Notification setting queries, scoped to one reseller."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db import locking
from cloudadmin.db.filters import count_rows, sliced
from cloudadmin.db.models import NotificationSetting
from cloudadmin.kit.pagination import Paging


async def count(session: AsyncSession, reseller_id: int) -> int:
    return await count_rows(
        session, NotificationSetting, NotificationSetting.reseller_id == reseller_id
    )


async def page(
    session: AsyncSession,
    reseller_id: int,
    order_by: list[Any],
    page: Paging,
) -> list[NotificationSetting]:
    stmt = (
        select(NotificationSetting)
        .where(NotificationSetting.reseller_id == reseller_id)
        .order_by(*order_by)
    )
    return list((await session.execute(sliced(stmt, page))).scalars())


async def get(
    session: AsyncSession,
    reseller_id: int,
    setting_id: int,
    *,
    for_change: bool = False,
    removal: bool = False,
) -> NotificationSetting | None:
    """``for_change``: locked until the transaction ends (db/locking.py)."""
    stmt = select(NotificationSetting).where(
        NotificationSetting.id == setting_id, NotificationSetting.reseller_id == reseller_id
    )
    if for_change:
        stmt = locking.for_change(stmt, removal=removal)
    return (await session.execute(stmt)).scalar_one_or_none()
