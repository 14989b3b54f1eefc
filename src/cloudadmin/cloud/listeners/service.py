"""Listeners: any user of the owning account reads, administrators and engineers
change them (docs/access.md): the v1 PATCH renames within its request, the v2 PATCH
starts a task (cloud/tasks). A listener locked by a task cannot be changed."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Actor, Caller
from cloudadmin.cloud import scoping
from cloudadmin.cloud.listeners import repository
from cloudadmin.cloud.listeners.schemas import Listener, ListenerList, ListenerStats, ListenerUser
from cloudadmin.cloud.listeners.task import TASK_TYPE
from cloudadmin.cloud.scoping import OwnedProject, RegionPath
from cloudadmin.cloud.tasks import service as tasks
from cloudadmin.cloud.tasks.schemas import TaskIds
from cloudadmin.db.models import Listener as ListenerRow
from cloudadmin.errors import Conflict, NotFound
from cloudadmin.events import user_actions
from cloudadmin.events.user_actions import Resource
from cloudadmin.kit.pagination import Paging

_STATS = ("active_connections", "bytes_in", "bytes_out", "request_errors", "total_connections")


def _out(row: ListenerRow, *, show_stats: bool) -> Listener:
    stats = None
    if show_stats:
        raw = row.stats or {}
        stats = ListenerStats(**{k: int(raw.get(k) or 0) for k in _STATS})
    return Listener(
        allowed_cidrs=row.allowed_cidrs,
        admin_state_up=True,
        connection_limit=row.connection_limit,
        creator_task_id=row.creator_task_id,
        id=row.id,
        insert_headers=dict(row.insert_headers or {}),
        load_balancer_id=row.load_balancer_id,
        name=row.name,
        operating_status=row.operating_status,
        pool_count=row.pool_count,
        protocol=row.protocol,
        protocol_port=row.protocol_port,
        provisioning_status=row.provisioning_status,
        secret_id=row.secret_id,
        sni_secret_id=row.sni_secret_id,
        stats=stats,
        task_id=row.task_id,
        timeout_client_data=row.timeout_client_data,
        timeout_member_connect=row.timeout_member_connect,
        timeout_member_data=row.timeout_member_data,
        user_list=[ListenerUser(**u) for u in row.user_list or []],
    )


async def _found(
    session: AsyncSession, project_id: int, region_id: int, listener_id: str
) -> ListenerRow:
    row = await repository.get_in(session, project_id, region_id, listener_id)
    if row is None:
        raise NotFound("Listener not found.")
    return row


async def _refuse_locked(
    session: AsyncSession, project_id: int, region_id: int, listener_id: str
) -> None:
    """After a conditional UPDATE wrote nothing: either a task holds the lock or the row
    went away meanwhile."""
    current = await _found(session, project_id, region_id, listener_id)
    if current.task_id is not None:
        raise Conflict(
            f"Listener {listener_id} is locked by task {current.task_id}; "
            "retry when the task has finished."
        )
    raise NotFound("Listener not found.")  # pragma: no cover - deleted concurrently


async def get(
    session: AsyncSession,
    caller: Caller,
    at: RegionPath,
    listener_id: str,
    *,
    show_stats: bool,
) -> Listener:
    project = await scoping.visible_project(session, caller, at.project_id)
    row = await _found(session, project.id, at.region_id, listener_id)
    return _out(row, show_stats=show_stats)


async def list_(
    session: AsyncSession,
    caller: Caller,
    at: RegionPath,
    page: Paging,
    *,
    load_balancer_id: str | None,
    name: str | None = None,
    show_stats: bool,
) -> ListenerList:
    project = await scoping.visible_project(session, caller, at.project_id)
    count, rows = await repository.list_in(
        session, project.id, at.region_id, page, load_balancer_id=load_balancer_id, name=name
    )
    return ListenerList(count=count, results=[_out(r, show_stats=show_stats) for r in rows])


async def _changeable(
    session: AsyncSession, actor: Actor, at: RegionPath, listener_id: str
) -> tuple[OwnedProject, ListenerRow]:
    """The listener and its project, for a change: 404 unless the caller sees both, 403
    unless it is an administrator or an engineer."""
    project = await scoping.visible_project(session, actor.caller, at.project_id)
    row = await _found(session, project.id, at.region_id, listener_id)
    scoping.require_admin_or_engineer(actor.caller)
    return project, row


async def rename(
    session: AsyncSession,
    actor: Actor,
    at: RegionPath,
    listener_id: str,
    name: str,
) -> Listener:
    project, _ = await _changeable(session, actor, at, listener_id)
    if not await repository.rename_if_unlocked(
        session, project.id, at.region_id, listener_id, name
    ):
        await _refuse_locked(session, project.id, at.region_id, listener_id)
    row = await _found(session, project.id, at.region_id, listener_id)
    await _record_update(session, actor, project, at, listener_id, name, {"name": name})
    return _out(row, show_stats=False)


async def _record_update(
    session: AsyncSession,
    actor: Actor,
    project: OwnedProject,
    at: RegionPath,
    listener_id: str,
    name: str,
    changes: dict[str, Any],
    task_id: str | None = None,
) -> None:
    """The user-action log's row of a listener's update (a rename, or a v2 PATCH's
    task)."""
    owner = user_actions.Owner(project.client_id, project.reseller_id)
    listener = Resource("lblistener", listener_id, search_field=name)
    await user_actions.record_change(
        session,
        actor,
        owner,
        "update",
        listener,
        changes,
        project_id=project.id,
        region_id=at.region_id,
        task_id=task_id,
    )


async def start_update(
    session: AsyncSession,
    actor: Actor,
    at: RegionPath,
    listener_id: str,
    changes: dict[str, Any],
) -> TaskIds:
    """The v2 PATCH: locks the listener with a new RUNNING task that holds ``changes``;
    the task runner applies them once this transaction has committed."""
    project, row = await _changeable(session, actor, at, listener_id)
    name = changes.get("name") or row.name
    task_id = tasks.new_task_id()
    if not await repository.lock_if_unlocked(
        session, project.id, at.region_id, listener_id, task_id
    ):
        await _refuse_locked(session, project.id, at.region_id, listener_id)
    await tasks.open_task(
        session,
        actor,
        task_id,
        TASK_TYPE,
        project=project,
        region_id=at.region_id,
        resource_id=listener_id,
        data=changes,
    )
    await _record_update(session, actor, project, at, listener_id, name, changes, task_id)
    return TaskIds(tasks=[task_id])
