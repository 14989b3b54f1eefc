"""GET /billing/org/v1/addendums (operation 13)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from cloudadmin.auth.deps import CurrentCaller, Session
from cloudadmin.billing.addendums import service
from cloudadmin.billing.addendums.schemas import AddendumPage, AddendumQuery
from cloudadmin.web.route import ApiRoute

router = APIRouter(route_class=ApiRoute, tags=["Addendums"])


@router.get(
    "/billing/org/v1/addendums",
    response_model=AddendumPage,
    response_model_exclude_unset=True,  # status_at_active_at only when active_at is given
    name="list_addendums",
    summary="List addendums",
)
async def list_addendums(
    request: Request,
    session: Session,
    caller: CurrentCaller,
    query: Annotated[AddendumQuery, Query()],
) -> AddendumPage:
    return await service.list_addendums(session, caller, query, url=request.url)
