"""Running a task: right after the change that started it commits, in the same process
(the change's endpoint schedules it), and settling the tasks whose process died.

A task is finished in one transaction: claimed (repository.claim), applied by its kind,
its state, error and times written, and its resource's lock released. A crash before
that commits leaves the task RUNNING with its lock, and nothing of the change applied;
the next pass applies it or records why it could not (ERROR). Two processes settling
the same task cannot both finish it: the claim lets one through.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cloudadmin.cloud.listeners import task as listener_task
from cloudadmin.cloud.tasks import repository
from cloudadmin.cloud.tasks.failure import TaskFailed
from cloudadmin.cloud.tasks.service import LEASE
from cloudadmin.db.models import Task
from cloudadmin.db.types import utcnow
from cloudadmin.db.unavailable import is_unavailable

log = logging.getLogger("cloudadmin.tasks")

Sessions = async_sessionmaker[AsyncSession]


@dataclass(frozen=True, slots=True)
class Kind:
    """What a task type does. ``apply`` makes the change and answers the IDs of the
    resources it created (or None); it raises TaskFailed, before it changes anything,
    when the change cannot be made. ``release`` frees the task's resource."""

    apply: Callable[[AsyncSession, Task], Awaitable[dict[str, list[Any]] | None]]
    release: Callable[[AsyncSession, Task], Awaitable[None]]


KINDS: dict[str, Kind] = {
    listener_task.TASK_TYPE: Kind(listener_task.apply, listener_task.release),
}

UNEXPECTED = "The task failed unexpectedly; nothing of it was applied."


# After a failure to reach the database, the runner tries again after these many
# seconds (half a minute in all, about the lease), then leaves the task to the next pass.
RETRY_DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)


def _unreachable(exc: BaseException) -> bool:
    """The database could not be reached, or not in time (a pool with no free
    connection, SQLite's lock held past its timeout): the task stays RUNNING (nothing of
    it committed), never ERROR."""
    if isinstance(exc, PoolTimeout | OSError | TimeoutError) or is_unavailable(exc):
        return True
    return isinstance(exc, DBAPIError) and "database is locked" in str(exc.orig)


async def run(
    sessions: Sessions, task_id: str, retry_delays: Sequence[float] = RETRY_DELAYS
) -> None:
    """Finishes the task, then any other whose process died (the next pass after a
    crash is the next task run anywhere, or the next start of `serve`)."""
    for delay in (*retry_delays, None):
        if await settle(sessions, task_id):
            break
        if delay is not None:
            await asyncio.sleep(delay)
    await settle_stranded(sessions, utcnow())


async def settle_stranded(sessions: Sessions, now: datetime | None) -> int:
    """Settles every RUNNING task whose lease has passed at ``now`` (with None: every
    RUNNING task, which only a start may ask: no task of this process runs yet, and a
    task of another live process is settled once whoever claims it first); how many
    were found. Never raises: a database that does not answer leaves them for the next
    pass."""
    try:
        async with sessions() as session:
            ids = await repository.stranded(session, now)
    except Exception as exc:
        if not _unreachable(exc):
            log.exception("stranded tasks not looked for")
        else:
            log.warning("stranded tasks not looked for: %s", type(exc).__name__)
        return 0
    for task_id in ids:
        log.warning("task %s was left RUNNING by a process that stopped; settling it", task_id)
        await settle(sessions, task_id)
    return len(ids)


async def settle(sessions: Sessions, task_id: str) -> bool:
    """Finishes the task (FINISHED or ERROR) unless someone did; never raises. False
    when the database could not be reached: the task stays RUNNING."""
    try:
        await _finish(sessions, task_id)
    except Exception as exc:
        if _unreachable(exc):
            # Nothing committed; the task stays RUNNING until a later pass settles it.
            log.warning("task %s not settled (database: %s)", task_id, type(exc).__name__)
            return False
        log.exception("task %s failed unexpectedly", task_id)
        try:
            await _finish(sessions, task_id, failure=UNEXPECTED)
        except Exception as exc:
            log.warning("task %s not marked ERROR: %s", task_id, type(exc).__name__)
            return False
    return True


async def _finish(sessions: Sessions, task_id: str, *, failure: str | None = None) -> None:
    async with sessions() as session, session.begin():
        now = utcnow()
        if not await repository.claim(session, task_id, now, now + LEASE):
            return  # finished already, by this process or another
        stmt = select(Task).where(Task.id == task_id).execution_options(populate_existing=True)
        task = (await session.execute(stmt)).scalar_one()
        kind = KINDS.get(task.task_type)
        created: dict[str, list[Any]] | None = None
        if kind is None:
            failure = f"Unknown task type {task.task_type}."
        elif failure is None:
            try:
                created = await kind.apply(session, task)
            except TaskFailed as exc:
                failure = str(exc)
        if kind is not None:
            await kind.release(session, task)
        task.state = "ERROR" if failure is not None else "FINISHED"
        task.error = failure
        task.created_resources = created
        task.finished_on = task.updated_on = now
        task.lease_expires_at = None
