"""Task queries: the list's filters, one task, acknowledgement, and the runner's claim."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.filters import count_rows, in_where_given, within_given
from cloudadmin.db.models import Task
from cloudadmin.db.results import rows_matched

RUNNING = "RUNNING"


@dataclass(frozen=True, slots=True)
class TaskFilter:
    """The list's filters; each list matches any of its values, filters combine by AND."""

    state: Sequence[str] = ()
    task_type: str | None = None
    project_id: Sequence[int] = ()
    region_id: Sequence[int] = ()
    from_timestamp: datetime | None = None
    to_timestamp: datetime | None = None
    is_acknowledged: bool | None = None


def _conditions(scope: ColumnElement[bool], f: TaskFilter) -> list[ColumnElement[bool]]:
    conds = [
        scope,
        *in_where_given(
            (Task.state, f.state), (Task.project_id, f.project_id), (Task.region_id, f.region_id)
        ),
    ]
    if f.task_type is not None:
        conds.append(Task.task_type == f.task_type)
    conds += within_given(Task.created_on, f.from_timestamp, f.to_timestamp)
    if f.is_acknowledged is not None:
        acknowledged = Task.acknowledged_at.is_not(None)
        conds.append(acknowledged if f.is_acknowledged else Task.acknowledged_at.is_(None))
    return conds


async def count(session: AsyncSession, scope: ColumnElement[bool], f: TaskFilter) -> int:
    return await count_rows(session, Task, *_conditions(scope, f))


async def page(
    session: AsyncSession,
    scope: ColumnElement[bool],
    f: TaskFilter,
    *,
    order: str,
    limit: int,
    offset: int,
) -> Sequence[Task]:
    """By creation, then id (tasks made in the same instant keep one order)."""
    keys = (
        (Task.created_on, Task.id) if order == "asc" else (Task.created_on.desc(), Task.id.desc())
    )
    stmt = select(Task).where(*_conditions(scope, f)).order_by(*keys).limit(limit).offset(offset)
    return (await session.execute(stmt)).scalars().all()


async def get(session: AsyncSession, scope: ColumnElement[bool], task_id: str) -> Task | None:
    stmt = select(Task).where(Task.id == task_id, scope).execution_options(populate_existing=True)
    return (await session.execute(stmt)).scalar_one_or_none()


async def acknowledge(
    session: AsyncSession, conds: list[ColumnElement[bool]], user_id: int, now: datetime
) -> int:
    """Acknowledges the tasks matching ``conds`` that are not yet; how many."""
    stmt = (
        update(Task)
        .where(*conds, Task.acknowledged_at.is_(None))
        .values(acknowledged_at=now, acknowledged_by=user_id, updated_on=now)
        .execution_options(synchronize_session=False)
    )
    return rows_matched(await session.execute(stmt))


async def claim(session: AsyncSession, task_id: str, now: datetime, lease_until: datetime) -> bool:
    """Takes a RUNNING task for this transaction. On PostgreSQL the UPDATE holds the
    task's row until the transaction ends, and a concurrent claim waits for it and then
    finds the task no longer RUNNING; on SQLite writers take turns. So a task is
    finished once, whoever else tries."""
    stmt = (
        update(Task)
        .where(Task.id == task_id, Task.state == RUNNING)
        .values(updated_on=now, lease_expires_at=lease_until)
        .execution_options(synchronize_session=False)
    )
    return bool(rows_matched(await session.execute(stmt)))


async def stranded(session: AsyncSession, now: datetime | None) -> Sequence[str]:
    """The RUNNING tasks whose lease has passed at ``now`` (every RUNNING one without it)."""
    stmt = select(Task.id).where(Task.state == RUNNING).order_by(Task.created_on, Task.id)
    if now is not None:
        stmt = stmt.where(Task.lease_expires_at <= now)
    return (await session.execute(stmt)).scalars().all()
