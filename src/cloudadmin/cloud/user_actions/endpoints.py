"""GET /cloud/v1/user_actions: the user-action log."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from cloudadmin.cloud.list_order import Sorting, chosen
from cloudadmin.cloud.user_actions import service
from cloudadmin.cloud.user_actions.filter_values import SourceIp, Text255, UserAgent
from cloudadmin.cloud.user_actions.repository import LogFilter
from cloudadmin.cloud.user_actions.schemas import ActionType, ApiGroup, OrderBy, UserActionList
from cloudadmin.kit.ints import Id32Filter, PageOffset
from cloudadmin.kit.params import InstantQuery
from cloudadmin.web.deps import CurrentCaller, Session
from cloudadmin.web.route import ApiRoute

router = APIRouter(route_class=ApiRoute, tags=["User actions"])


def _several(what: str) -> Any:
    """A list filter's parameter: repeated, it matches any of its values."""
    return Query(description=f"{what} (several allowed).")


@router.get("/cloud/v1/user_actions", summary="List user actions")
async def list_user_actions(
    session: Session,
    caller: CurrentCaller,
    action_type: Annotated[list[ActionType] | None, _several("User action type")] = None,
    api_group: Annotated[list[ApiGroup] | None, _several("API group")] = None,
    from_timestamp: InstantQuery = None,
    to_timestamp: InstantQuery = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="At most 1000 items.")] = 1000,
    offset: Annotated[PageOffset, Query(description="Items skipped.")] = 0,
    order_by: Annotated[
        OrderBy | None,
        Query(description="By timestamp: `asc` oldest first, `desc` (default) most recent first."),
    ] = None,
    sorting: Sorting = None,
    project_id: Annotated[list[Id32Filter] | None, _several("Project ID")] = None,
    region_id: Annotated[list[Id32Filter] | None, _several("Region ID")] = None,
    resource_id: Annotated[list[Text255] | None, _several("Resource ID")] = None,
    search_field: Annotated[
        str | None,
        Query(
            max_length=255,
            description="Part of a resource's `search_field` (its name), any letter case.",
        ),
    ] = None,
    source_user_ips: Annotated[list[SourceIp] | None, _several("Originating IP address")] = None,
    user_agents: Annotated[list[UserAgent] | None, _several("User-Agent")] = None,
) -> UserActionList:
    """The user-action log: the records subscribers receive over AMQP, newest first unless
    `order_by=asc`. Operators: every account's; resellers: their own account's and their
    clients'; anyone else: their own account's. List filters take the parameter several
    times and match any value; filters combine by AND."""
    flt = LogFilter(
        action_type=action_type or (),
        api_group=api_group or (),
        from_timestamp=from_timestamp,
        to_timestamp=to_timestamp,
        project_id=project_id or (),
        region_id=region_id or (),
        resource_id=resource_id or (),
        search_field=search_field or None,
        source_user_ips=source_user_ips or (),
        user_agents=user_agents or (),
    )
    return await service.list_(
        session, caller, flt, order=chosen(order_by, sorting), limit=limit, offset=offset
    )
