"""Lifecycle policy queries, always inside one project and region."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import LifecyclePolicy


async def get_in(
    session: AsyncSession, project_id: int, region_id: int, policy_id: int
) -> LifecyclePolicy | None:
    stmt = select(LifecyclePolicy).where(
        LifecyclePolicy.id == policy_id,
        LifecyclePolicy.project_id == project_id,
        LifecyclePolicy.region_id == region_id,
    )
    return (await session.execute(stmt)).scalar_one_or_none()
