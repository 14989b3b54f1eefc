"""GET /iam/activity_log/requests  and one of them by id."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from cloudadmin.auth.deps import CurrentCaller, Session
from cloudadmin.iam.activity_log import service
from cloudadmin.iam.activity_log.repository import LogFilter
from cloudadmin.iam.activity_log.schemas import ActivityLogPage, ActivityLogRecord
from cloudadmin.kit.ints import INT64_MAX, Id32Filter, PageOffset
from cloudadmin.kit.params import InstantQuery
from cloudadmin.web.route import ApiRoute

router = APIRouter(route_class=ApiRoute, tags=["Activity log"])


@router.get("/iam/activity_log/requests", summary="List logged API requests")
async def list_activity_log_requests(
    request: Request,
    session: Session,
    caller: CurrentCaller,
    limit: Annotated[int, Query(ge=1, le=1000)] = 25,
    offset: Annotated[PageOffset, Query()] = 0,
    method: Annotated[str | None, Query(pattern=r"^[A-Za-z]{1,10}$")] = None,
    path: Annotated[str | None, Query(max_length=2048)] = None,
    status_code: Annotated[
        str | None, Query(pattern=r"^[1-5][0-9]{0,2}$", description="Prefix: 4, 40 or 404.")
    ] = None,
    remote_ip_address: Annotated[str | None, Query(max_length=45)] = None,
    user_id: Annotated[Id32Filter | None, Query()] = None,
    token_id: Annotated[Id32Filter | None, Query()] = None,
    client_id: Annotated[
        Id32Filter | None, Query(description="Operators only: one account.")
    ] = None,
    min_requested_at: InstantQuery = None,
    max_requested_at: InstantQuery = None,
) -> ActivityLogPage:
    flt = LogFilter(
        method=method,
        path=path,
        status_code=status_code,
        remote_ip_address=remote_ip_address,
        user_id=user_id,
        token_id=token_id,
        client_id=client_id,
        min_requested_at=min_requested_at,
        max_requested_at=max_requested_at,
    )
    return await service.list_requests(
        session, caller, flt, limit=limit, offset=offset, url=request.url
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
