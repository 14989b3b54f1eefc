"""Tasks, scoped like the resources they change (docs/access.md): a task belongs to the
account that owns its project, and only that account's users (and operators) see it;
for anyone else it does not exist (404). Any user who sees a task may acknowledge it
(acknowledging marks it read, it changes nothing else)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import ColumnElement
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Actor, Caller
from cloudadmin.auth.scoping import caller_scope
from cloudadmin.cloud.scoping import OwnedProject
from cloudadmin.cloud.tasks import repository
from cloudadmin.cloud.tasks.repository import RUNNING, TaskFilter
from cloudadmin.cloud.tasks.schemas import Task, TaskList
from cloudadmin.db.models import Task as TaskRow
from cloudadmin.db.types import utcnow
from cloudadmin.errors import NotFound
from cloudadmin.kit.redact import redact
from cloudadmin.kit.timeparse import isoformat_z

# How long the process that starts a task is trusted to finish it: past it, the task's
# process is taken for dead and anyone settles the task (cloud/tasks/runner.py). The
# work itself is one short transaction.
LEASE = timedelta(seconds=30)


def _at(value: Any) -> str | None:
    return None if value is None else isoformat_z(value)


def out(row: TaskRow) -> Task:
    return Task(
        id=row.id,
        task_type=row.task_type,
        state=row.state,
        user_id=row.user_id,
        client_id=row.client_id,
        user_client_id=row.user_client_id,
        project_id=row.project_id,
        region_id=row.region_id,
        created_on=_at(row.created_on),
        updated_on=_at(row.updated_on),
        finished_on=_at(row.finished_on),
        acknowledged_at=_at(row.acknowledged_at),
        acknowledged_by=row.acknowledged_by,
        created_resources=row.created_resources,
        data=None if row.data is None else redact(row.data),
        detailed_state=None,
        error=row.error,
        job_id=row.job_id,
        lifecycle_policy_id=row.lifecycle_policy_id,
        schedule_id=row.schedule_id,
        request_id=row.request_id,
    )


def _scope(caller: Caller) -> ColumnElement[bool]:
    return caller_scope(caller, TaskRow.client_id)


async def list_(
    session: AsyncSession, caller: Caller, flt: TaskFilter, *, order: str, limit: int, offset: int
) -> TaskList:
    scope = _scope(caller)
    total = await repository.count(session, scope, flt)
    rows = await repository.page(session, scope, flt, order=order, limit=limit, offset=offset)
    return TaskList(count=total, results=[out(r) for r in rows])


async def _found(session: AsyncSession, caller: Caller, task_id: str) -> TaskRow:
    row = await repository.get(session, _scope(caller), task_id)
    if row is None:
        raise NotFound("Task not found.")
    return row


async def get(session: AsyncSession, caller: Caller, task_id: str) -> Task:
    return out(await _found(session, caller, task_id))


async def acknowledge_one(session: AsyncSession, caller: Caller, task_id: str) -> Task:
    """Acknowledged once: a second acknowledgement keeps the first one's time and user."""
    await _found(session, caller, task_id)
    conds = [TaskRow.id == task_id, _scope(caller)]
    await repository.acknowledge(session, conds, caller.user_id, utcnow())
    return out(await _found(session, caller, task_id))


async def acknowledge_all(
    session: AsyncSession, caller: Caller, *, project_id: int | None, region_id: int | None
) -> None:
    conds = [_scope(caller)]
    if project_id is not None:
        conds.append(TaskRow.project_id == project_id)
    if region_id is not None:
        conds.append(TaskRow.region_id == region_id)
    await repository.acknowledge(session, conds, caller.user_id, utcnow())


def new_task_id() -> str:
    return str(uuid.uuid4())


async def open_task(
    session: AsyncSession,
    actor: Actor,
    task_id: str,
    task_type: str,
    *,
    project: OwnedProject,
    region_id: int,
    resource_id: str,
    data: dict[str, Any],
) -> TaskRow:
    """Writes a RUNNING task in the change's transaction (its resource's lock is the
    caller's to take in the same transaction); cloud/tasks/runner.py finishes it."""
    now = utcnow()
    row = TaskRow(
        id=task_id,
        task_type=task_type,
        state=RUNNING,
        user_id=actor.caller.user_id,
        client_id=project.client_id,
        user_client_id=actor.caller.account_id,
        project_id=project.id,
        region_id=region_id,
        resource_id=resource_id,
        data=data,
        request_id=actor.request_id,
        created_on=now,
        updated_on=now,
        lease_expires_at=now + LEASE,
    )
    session.add(row)
    await session.flush()
    return row
