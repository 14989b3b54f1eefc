"""GET /cloud/v1/lifecycle_policy/{project_id}/{region_id}/{policy_id} ."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from cloudadmin.cloud.lifecycle_policies import service
from cloudadmin.cloud.lifecycle_policies.schemas import LifecyclePolicy, LifecyclePolicyList
from cloudadmin.cloud.scoping import InRegion, Page
from cloudadmin.kit.ints import INT32_MAX
from cloudadmin.web.deps import CurrentCaller, Session
from cloudadmin.web.route import ApiRoute

router = APIRouter(route_class=ApiRoute, tags=["Snapshot lifecycle policies"])

BASE = "/cloud/v1/lifecycle_policy/{project_id}/{region_id}"
NeedVolumes = Annotated[bool, Query(description="Fill `volumes` (an empty list otherwise).")]


@router.get(f"{BASE}/{{policy_id}}", summary="Read a snapshot lifecycle policy")
async def get_lifecycle_policy(
    at: InRegion,
    policy_id: Annotated[int, Path(ge=1, le=INT32_MAX, description="Policy ID")],
    session: Session,
    caller: CurrentCaller,
    need_volumes: NeedVolumes = False,
) -> LifecyclePolicy:
    """Any user of the account that owns the project; operators. `schedules` holds `cron`
    and `interval` schedules (discriminated by `type`); `volumes` is filled only with
    `need_volumes=true` and is empty otherwise."""
    return await service.get(session, caller, at, policy_id, need_volumes=need_volumes)


@router.get(BASE, summary="List snapshot lifecycle policies")
async def list_lifecycle_policies(
    at: InRegion,
    session: Session,
    caller: CurrentCaller,
    page: Page,
    need_volumes: NeedVolumes = False,
) -> LifecyclePolicyList:
    """The policies of the project in the region, by id. Any user of the account that owns
    the project; operators. Each policy reads as the GET of one does, `volumes` following
    `need_volumes` the same way."""
    return await service.list_(session, caller, at, page, need_volumes=need_volumes)
