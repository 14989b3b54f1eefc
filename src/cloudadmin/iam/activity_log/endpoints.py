"""GET /iam/activity_log/requests  and one of them by id."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request

from cloudadmin.iam.activity_log import service
from cloudadmin.iam.activity_log.repository import LogFilter
from cloudadmin.iam.activity_log.schemas import ActivityLogPage, ActivityLogRecord
from cloudadmin.kit.ints import INT64_MAX, PageOffset
from cloudadmin.web.app_state import app_state
from cloudadmin.web.deps import Connection, CurrentCaller, Session
from cloudadmin.web.route import ApiRoute


async def _reads_written(request: Request, conn: Connection) -> None:
    """The rows of this process's reads that wait to be written in a batch are written
    first, on the request's own connection: a caller reads the log of the requests it
    has just made (docs/activity-log.md, "Durability")."""
    await app_state(request.app).request_log.write_waiting(conn)


router = APIRouter(
    route_class=ApiRoute, tags=["Activity log"], dependencies=[Depends(_reads_written)]
)


@dataclass(frozen=True, slots=True)
class LogPage:
    """The list's page, a dependency declared before the filters (LogFilter): FastAPI
    checks dependencies in order, so a 400 names ``limit`` and ``offset`` first, as the
    parameters are documented."""

    limit: Annotated[int, Query(ge=1, le=1000)] = 25
    offset: Annotated[PageOffset, Query()] = 0


@router.get("/iam/activity_log/requests", summary="List logged API requests")
async def list_activity_log_requests(
    request: Request,
    session: Session,
    caller: CurrentCaller,
    page: Annotated[LogPage, Depends()],
    flt: Annotated[LogFilter, Depends()],
) -> ActivityLogPage:
    return await service.list_requests(
        session, caller, flt, limit=page.limit, offset=page.offset, url=request.url
    )


@router.get("/iam/activity_log/requests/{id}", summary="Account Request Detail")
async def get_activity_log_request(
    id: Annotated[int, Path(ge=1, le=INT64_MAX, description="Request ID.")],  # noqa: A002
    session: Session,
    caller: CurrentCaller,
) -> ActivityLogRecord:
    """One logged request, visible to the same callers as in the list: operators any,
    members only their own requests, everyone else their account's. Any other id is 404."""
    return await service.get_request(session, caller, id)
