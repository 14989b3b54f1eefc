"""Who may touch what under /cloud (docs/access.md).

A ``{project_id}`` path is scoped by the account that owns the project: only that
account's users (and operators) see it; for anyone else the project does not exist
(404). Inside the account, roles decide (403).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Path, Query
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Caller
from cloudadmin.auth.scoping import caller_scope
from cloudadmin.db.models import Client, Project
from cloudadmin.db.models.accounts import ADMINISTRATORS, ENGINEERS
from cloudadmin.errors import NotFound, PermissionDenied
from cloudadmin.kit.ints import INT32_MAX
from cloudadmin.kit.pagination import Paging

ProjectId = Annotated[int, Path(ge=1, le=INT32_MAX, description="Project ID")]
RegionId = Annotated[int, Path(ge=1, le=INT32_MAX, description="Region ID")]
Limit = Annotated[
    int, Query(ge=1, le=1000, description="Maximum number of items returned (1-1000).")
]
Offset = Annotated[
    int, Query(ge=0, le=INT32_MAX, description="Number of items skipped from the start.")
]


def _paging(limit: Limit = 1000, offset: Offset = 0) -> Paging:
    return Paging(limit, offset)


# ``limit`` (1000 unless given) and ``offset`` of a /cloud list.
Page = Annotated[Paging, Depends(_paging)]


@dataclass(frozen=True, slots=True)
class RegionPath:
    """``{project_id}/{region_id}`` of a /cloud path: a project's resources in one region."""

    project_id: ProjectId
    region_id: RegionId


InRegion = Annotated[RegionPath, Depends()]


@dataclass(frozen=True, slots=True)
class OwnedProject:
    """A project the caller may see, with the account that owns it."""

    id: int
    client_id: int
    reseller_id: int | None


async def visible_project(session: AsyncSession, caller: Caller, project_id: int) -> OwnedProject:
    """The project, if the caller is a user of its (live) owning account or an operator."""
    stmt = (
        select(Project.id, Project.client_id, Client.reseller_id)
        .join(Client, Client.id == Project.client_id)
        .where(Project.id == project_id, Client.deleted.is_(False))
    )
    stmt = stmt.where(caller_scope(caller, Project.client_id))
    row = (await session.execute(stmt)).first()
    if row is None:
        raise NotFound("Project not found.")
    return OwnedProject(id=row[0], client_id=row[1], reseller_id=row[2])


def require_group(caller: Caller, *group_ids: int) -> None:
    """403 unless the caller belongs to one of ``group_ids`` (operators always pass)."""
    if caller.is_operator or caller.group_ids & set(group_ids):
        return
    raise PermissionDenied()


def require_admin(caller: Caller) -> None:
    require_group(caller, ADMINISTRATORS)


def require_admin_or_engineer(caller: Caller) -> None:
    require_group(caller, ADMINISTRATORS, ENGINEERS)
