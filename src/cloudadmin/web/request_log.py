"""What ApiRoute needs of the activity log: one row per request, on its connection.

The log is a domain of its own (iam/activity_log), built on ApiRoute like every other
domain, so web/ cannot import it: create_app hands iam.activity_log.recorder.record
over as ``AppState.request_log``.
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
        own, or after a rollback a short one of its own: ``logged.reverted``)."""
