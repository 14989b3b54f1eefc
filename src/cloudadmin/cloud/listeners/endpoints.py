"""Listeners: GET list, GET one, PATCH (v1: rename within the request; v2: a task)."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, BackgroundTasks, Path, Query

from cloudadmin.cloud.listeners import service
from cloudadmin.cloud.listeners.schemas import (
    Listener,
    ListenerList,
    ListenerPatch,
    ListenerRename,
)
from cloudadmin.cloud.scoping import InRegion, Page
from cloudadmin.cloud.tasks.deps import AppSessions, run_after_response
from cloudadmin.cloud.tasks.schemas import TaskIds
from cloudadmin.web.deps import CurrentActor, CurrentCaller, Session
from cloudadmin.web.route import ApiRoute

router = APIRouter(route_class=ApiRoute, tags=["Load balancer listeners"])

BASE = "/cloud/v1/lblisteners/{project_id}/{region_id}"
BASE_V2 = "/cloud/v2/lblisteners/{project_id}/{region_id}"

ListenerId = Annotated[UUID, Path(description="Listener ID (UUID)")]
ShowStats = Annotated[bool, Query(description="Fill `stats` (null otherwise).")]


@router.get(BASE, summary="List load balancer listeners")
async def list_lblisteners(
    at: InRegion,
    session: Session,
    caller: CurrentCaller,
    page: Page,
    show_stats: ShowStats = False,
    load_balancer_id: Annotated[
        UUID | None, Query(description="Only the listeners of this load balancer.")
    ] = None,
    name: Annotated[
        str | None, Query(max_length=255, description="Only the listeners of this name.")
    ] = None,
) -> ListenerList:
    return await service.list_(
        session,
        caller,
        at,
        page,
        load_balancer_id=None if load_balancer_id is None else str(load_balancer_id),
        name=name,
        show_stats=show_stats,
    )


@router.get(f"{BASE}/{{listener_id}}", summary="Read a load balancer listener")
async def get_lblistener(
    at: InRegion,
    listener_id: ListenerId,
    session: Session,
    caller: CurrentCaller,
    show_stats: ShowStats = False,
) -> Listener:
    return await service.get(session, caller, at, str(listener_id), show_stats=show_stats)


@router.patch(f"{BASE}/{{listener_id}}", summary="Rename a load balancer listener", deprecated=True)
async def rename_lblistener(
    at: InRegion,
    listener_id: ListenerId,
    body: ListenerRename,
    session: Session,
    actor: CurrentActor,
) -> Listener:
    """Deprecated, as by the provider: use the v2 PATCH. Changes only the name, within the
    request. A listener whose `task_id` is set is locked by that task: the answer is 409
    ConflictError naming the task and nothing changes. Client administrators and Engineers
    of the owning account; operators."""
    return await service.rename(session, actor, at, str(listener_id), body.name)


@router.patch(f"{BASE_V2}/{{listener_id}}", summary="Update a load balancer listener")
async def update_lblistener(
    at: InRegion,
    listener_id: ListenerId,
    body: ListenerPatch,
    session: Session,
    actor: CurrentActor,
    sessions: AppSessions,
    background: BackgroundTasks,
) -> TaskIds:
    """Starts a task (`patch_lblistener`) that changes the fields given, and answers its
    id: poll `GET /cloud/v1/tasks/{task_id}` until it is FINISHED or ERROR. While it
    runs, the listener's `task_id` is the task's and any other change is refused with 409
    ConflictError; a listener already locked answers 409 and no task starts. What the load
    balancer refuses (`admin_state_up: false`; a secret on a listener that is neither
    TERMINATED_HTTPS nor PROMETHEUS) ends the task in ERROR with its `error`, and nothing
    changes. Client administrators and Engineers of the owning account; operators."""
    ids = await service.start_update(session, actor, at, str(listener_id), body.changes())
    run_after_response(background, sessions, ids)
    return ids
