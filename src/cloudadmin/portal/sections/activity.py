"""The activity section (docs/portal.md)."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from cloudadmin.portal.context import PREFIX, AdminPage, PortalRoute

router = APIRouter(prefix=f"{PREFIX}/activity", route_class=PortalRoute, include_in_schema=False)


@router.get("")
async def activity_index(portal: AdminPage) -> Response:
    return portal.page("Coming", "coming.html")
