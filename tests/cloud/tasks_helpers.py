"""Arranging and reading tasks."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import Listener, Task
from cloudadmin.db.types import utcnow

TASK_FIELDS = {
    "acknowledged_at",
    "acknowledged_by",
    "client_id",
    "created_on",
    "created_resources",
    "data",
    "detailed_state",
    "error",
    "finished_on",
    "id",
    "job_id",
    "lifecycle_policy_id",
    "project_id",
    "region_id",
    "request_id",
    "schedule_id",
    "state",
    "task_type",
    "updated_on",
    "user_client_id",
    "user_id",
}


def v2_url(project: int, region: int, lid: str) -> str:
    return f"/cloud/v2/lblisteners/{project}/{region}/{lid}"


async def make_task(
    session: AsyncSession, client_id: int, *, created_on: datetime | None = None, **over: Any
) -> str:
    """A task row as a finished change leaves it (FINISHED unless told)."""
    now = created_on or utcnow()
    fields: dict[str, Any] = {
        "id": str(uuid.uuid4()),
        "task_type": "patch_lblistener",
        "state": "FINISHED",
        "user_id": 1,
        "client_id": client_id,
        "user_client_id": client_id,
        "data": {"name": "web"},
        "created_on": now,
        "updated_on": now,
        "finished_on": now,
    }
    fields.update(over)
    session.add(Task(**fields))
    await session.commit()
    return str(fields["id"])


async def stored_task(session: AsyncSession, task_id: str) -> Task:
    row = (
        await session.execute(
            select(Task).where(Task.id == task_id).execution_options(populate_existing=True)
        )
    ).scalar_one()
    await session.commit()  # end the read: on SQLite it holds the database lock
    return row


async def stored_listener(session: AsyncSession, lid: str) -> Listener:
    row = (
        await session.execute(
            select(Listener).where(Listener.id == lid).execution_options(populate_existing=True)
        )
    ).scalar_one()
    await session.commit()
    return row
