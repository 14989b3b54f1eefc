"""Lifecycle policy queries, always inside one project and region."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.filters import count_rows, sliced
from cloudadmin.db.models import LifecyclePolicy
from cloudadmin.kit.pagination import Paging


async def get_in(
    session: AsyncSession, project_id: int, region_id: int, policy_id: int
) -> LifecyclePolicy | None:
    stmt = select(LifecyclePolicy).where(
        LifecyclePolicy.id == policy_id,
        LifecyclePolicy.project_id == project_id,
        LifecyclePolicy.region_id == region_id,
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def list_in(
    session: AsyncSession, project_id: int, region_id: int, page: Paging
) -> tuple[int, Sequence[LifecyclePolicy]]:
    conds = [LifecyclePolicy.project_id == project_id, LifecyclePolicy.region_id == region_id]
    count = await count_rows(session, LifecyclePolicy, *conds)
    rows = await session.execute(
        sliced(select(LifecyclePolicy).where(*conds).order_by(LifecyclePolicy.id), page)
    )
    return count, rows.scalars().all()
