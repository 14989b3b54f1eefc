"""Tasks: GET list, GET one, POST acknowledge (one, all)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from cloudadmin.cloud.list_order import Sorting, chosen
from cloudadmin.cloud.tasks import service
from cloudadmin.cloud.tasks.repository import TaskFilter
from cloudadmin.cloud.tasks.schemas import Task, TaskList, TaskOrderBy, TaskState
from cloudadmin.kit.ints import INT32_MAX, Id32Filter, PageOffset
from cloudadmin.kit.params import InstantQuery
from cloudadmin.web.deps import CurrentCaller, Session
from cloudadmin.web.route import ApiRoute

router = APIRouter(route_class=ApiRoute, tags=["Tasks"])

BASE = "/cloud/v1/tasks"

TaskId = Annotated[str, Path(max_length=64, description="Task ID")]
AnyProject = Annotated[int | None, Query(ge=1, le=INT32_MAX, description="Project ID")]
AnyRegion = Annotated[int | None, Query(ge=1, le=INT32_MAX, description="Region ID")]


@router.get(BASE, summary="List tasks")
async def list_tasks(
    session: Session,
    caller: CurrentCaller,
    state: Annotated[
        list[TaskState] | None, Query(description="Task state (several allowed).")
    ] = None,
    task_type: Annotated[
        str | None, Query(max_length=64, description="Task type (`patch_lblistener`).")
    ] = None,
    project_id: Annotated[
        list[Id32Filter] | None, Query(description="Project ID (several allowed).")
    ] = None,
    region_id: Annotated[
        list[Id32Filter] | None, Query(description="Region ID (several allowed).")
    ] = None,
    from_timestamp: InstantQuery = None,
    to_timestamp: InstantQuery = None,
    is_acknowledged: Annotated[
        bool | None, Query(description="Only acknowledged tasks (true) or the others.")
    ] = None,
    order_by: Annotated[
        TaskOrderBy | None,
        Query(description="By creation: `asc` oldest first, `desc` (default) newest first."),
    ] = None,
    sorting: Sorting = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="At most 1000 items.")] = 10,
    offset: Annotated[PageOffset, Query(description="Items skipped.")] = 0,
) -> TaskList:
    """The caller's tasks, newest first unless `order_by=asc`: operators see every
    account's, anyone else their own account's. `from_timestamp` and `to_timestamp`
    bound the creation time (both included). List filters take the parameter several
    times and match any value; filters combine by AND."""
    flt = TaskFilter(
        state=state or (),
        task_type=task_type,
        project_id=project_id or (),
        region_id=region_id or (),
        from_timestamp=from_timestamp,
        to_timestamp=to_timestamp,
        is_acknowledged=is_acknowledged,
    )
    return await service.list_(
        session, caller, flt, order=chosen(order_by, sorting), limit=limit, offset=offset
    )


@router.get(f"{BASE}/{{task_id}}", summary="Read a task")
async def get_task(task_id: TaskId, session: Session, caller: CurrentCaller) -> Task:
    """One task; another account's is 404 NotFoundError."""
    return await service.get(session, caller, task_id)


@router.post(f"{BASE}/{{task_id}}/acknowledge", summary="Acknowledge a task")
async def acknowledge_task(task_id: TaskId, session: Session, caller: CurrentCaller) -> Task:
    """Marks the task acknowledged (`acknowledged_at`, `acknowledged_by`) and answers it;
    a task acknowledged already keeps its first acknowledgement. Any user who sees it."""
    return await service.acknowledge_one(session, caller, task_id)


@router.post(f"{BASE}/acknowledge_all", summary="Acknowledge all tasks")
async def acknowledge_all_tasks(
    session: Session,
    caller: CurrentCaller,
    project_id: AnyProject = None,
    region_id: AnyRegion = None,
) -> None:
    """Acknowledges every task the caller sees that is not yet, or only those of the
    project and region given."""
    await service.acknowledge_all(session, caller, project_id=project_id, region_id=region_id)
