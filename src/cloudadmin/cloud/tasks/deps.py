"""What an endpoint that starts a task needs: the application's sessions, for the
task's own transaction after the request's has committed."""

from __future__ import annotations

from typing import Annotated

from fastapi import BackgroundTasks, Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from cloudadmin.cloud.tasks import runner
from cloudadmin.cloud.tasks.schemas import TaskIds
from cloudadmin.web.app_state import app_state


async def _sessions(request: Request) -> async_sessionmaker[AsyncSession]:
    return app_state(request.app).sessionmaker


AppSessions = Annotated[async_sessionmaker[AsyncSession], Depends(_sessions)]


def run_after_response(
    background: BackgroundTasks, sessions: async_sessionmaker[AsyncSession], ids: TaskIds
) -> None:
    """The tasks run once the answer is sent, which is after the request's transaction
    has committed (web/route.py commits before it answers): the task and its lock are
    visible, and a failure of the task cannot undo the answer."""
    for task_id in ids.tasks:
        background.add_task(runner.run, sessions, task_id)
