"""Listener queries, always inside one project and region."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.filters import count_rows, sliced
from cloudadmin.db.models import Listener
from cloudadmin.db.results import rows_matched
from cloudadmin.kit.pagination import Paging


async def get_in(
    session: AsyncSession, project_id: int, region_id: int, listener_id: str
) -> Listener | None:
    stmt = (
        select(Listener)
        .where(
            Listener.id == listener_id,
            Listener.project_id == project_id,
            Listener.region_id == region_id,
        )
        .execution_options(populate_existing=True)
    )
    return (await session.execute(stmt)).scalar_one_or_none()


async def list_in(
    session: AsyncSession,
    project_id: int,
    region_id: int,
    page: Paging,
    *,
    load_balancer_id: str | None,
    name: str | None = None,
) -> tuple[int, Sequence[Listener]]:
    conds = [Listener.project_id == project_id, Listener.region_id == region_id]
    if load_balancer_id is not None:
        conds.append(Listener.load_balancer_id == load_balancer_id)
    if name is not None:  # the SDK's `name` filter: the exact name
        conds.append(Listener.name == name)
    count = await count_rows(session, Listener, *conds)
    rows = await session.execute(
        sliced(select(Listener).where(*conds).order_by(Listener.name, Listener.id), page)
    )
    return count, rows.scalars().all()


async def rename_if_unlocked(
    session: AsyncSession, project_id: int, region_id: int, listener_id: str, name: str
) -> bool:
    """Renames only while no task holds the lock (:func:`_update_if_unlocked`)."""
    return await _update_if_unlocked(session, project_id, region_id, listener_id, name=name)


async def lock_if_unlocked(
    session: AsyncSession, project_id: int, region_id: int, listener_id: str, task_id: str
) -> bool:
    """The task takes the lock only while nobody holds it (:func:`_update_if_unlocked`)."""
    return await _update_if_unlocked(session, project_id, region_id, listener_id, task_id=task_id)


async def _update_if_unlocked(
    session: AsyncSession, project_id: int, region_id: int, listener_id: str, **values: object
) -> bool:
    """One conditional UPDATE: writes ``values`` only while no task holds the lock.

    The condition is evaluated by the database on the row it writes (PostgreSQL
    re-checks it after waiting for a concurrent writer's row lock), so a lock taken
    concurrently is never overwritten.
    """
    stmt = (
        update(Listener)
        .where(
            Listener.id == listener_id,
            Listener.project_id == project_id,
            Listener.region_id == region_id,
            Listener.task_id.is_(None),
        )
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    result = await session.execute(stmt)
    return bool(rows_matched(result))
