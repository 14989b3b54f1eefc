"""What ApiRoute needs of the activity log: one row per request, on its connection.

The log is a domain of its own (iam/activity_log), built on ApiRoute like every other
domain, so web/ cannot import it: create_app hands an iam.activity_log.recorder
RequestRecorder over as ``AppState.request_log``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request

from cloudadmin.auth.caller import Caller


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    """A request as its log row records it."""

    request: Request
    caller: Caller
    action: str
    requested_at: datetime
    status_code: int
    # Written after the request's own transaction was rolled back, in a short one.
    reverted: bool


class RequestLog(Protocol):
    async def __call__(self, conn: AsyncConnection, logged: LoggedRequest) -> None:
        """Writes the request's log row in the connection's transaction (the request's
        own, or after a rollback a short one of its own: ``logged.reverted``); a read's
        row may instead wait a moment to be written with others (``write_waiting``)."""

    async def write_waiting(self, conn: AsyncConnection) -> None:
        """Writes, on ``conn``, the rows of reads that still wait to be written."""

    async def close(self) -> None:
        """Writes what still waits; the application is stopping."""
