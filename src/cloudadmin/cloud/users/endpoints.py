"""GET /cloud/v1/users ."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from cloudadmin.cloud.scoping import Page
from cloudadmin.cloud.users import service
from cloudadmin.cloud.users.schemas import CloudUserList
from cloudadmin.kit.ints import INT32_MAX
from cloudadmin.web.deps import CurrentCaller, Session
from cloudadmin.web.route import ApiRoute

router = APIRouter(route_class=ApiRoute, tags=["Cloud users"])


@router.get("/cloud/v1/users", summary="List cloud users")
async def list_cloud_users(
    session: Session,
    caller: CurrentCaller,
    page: Page,
    user_id: Annotated[int | None, Query(ge=0, le=INT32_MAX, description="Only this user.")] = None,
) -> CloudUserList:
    """The users of the caller's account (deleted users are absent), by id. `is_admin` means
    a member of Administrators."""
    return await service.list_users(session, caller, page, user_id=user_id)
