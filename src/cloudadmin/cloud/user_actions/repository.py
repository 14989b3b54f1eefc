"""User-action log queries over the events' columns and resource rows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, exists, select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.filters import count_rows, in_where_given, within_given
from cloudadmin.db.models import UserActionEvent, UserActionResource


@dataclass(frozen=True, slots=True)
class LogFilter:
    """The query's filters; each list matches any of its values, filters combine by AND."""

    action_type: Sequence[str] = ()
    api_group: Sequence[str] = ()
    from_timestamp: datetime | None = None
    to_timestamp: datetime | None = None
    project_id: Sequence[int] = ()
    region_id: Sequence[int] = ()
    resource_id: Sequence[str] = ()
    search_field: str | None = None
    source_user_ips: Sequence[str] = ()
    user_agents: Sequence[str] = ()


def _conditions(scope: list[ColumnElement[bool]], f: LogFilter) -> list[ColumnElement[bool]]:
    e = UserActionEvent
    conds = [
        *scope,
        *in_where_given(
            (e.action_type, f.action_type),
            (e.api_group, f.api_group),
            (e.project_id, f.project_id),
            (e.region_id, f.region_id),
            (e.source_user_ip, f.source_user_ips),
            (e.user_agent, f.user_agents),
        ),
        *within_given(e.created_at, f.from_timestamp, f.to_timestamp),
    ]
    r = UserActionResource
    if f.resource_id:
        conds.append(exists().where(r.event_id == e.id, r.resource_id.in_(list(f.resource_id))))
    if f.search_field:
        conds.append(
            exists().where(
                r.event_id == e.id, r.search_field.icontains(f.search_field, autoescape=True)
            )
        )
    return conds


async def count(session: AsyncSession, scope: list[ColumnElement[bool]], f: LogFilter) -> int:
    return await count_rows(session, UserActionEvent, *_conditions(scope, f))


async def page(
    session: AsyncSession,
    scope: list[ColumnElement[bool]],
    f: LogFilter,
    *,
    order: str,
    limit: int,
    offset: int,
) -> Sequence[tuple[dict[str, object], bool]]:
    """``(body, acknowledged)`` pairs in time order (then id: the order of writing)."""
    e = UserActionEvent
    keys = (e.created_at, e.id) if order == "asc" else (e.created_at.desc(), e.id.desc())
    stmt = (
        select(e.body, e.acknowledged)
        .where(*_conditions(scope, f))
        .order_by(*keys)
        .limit(limit)
        .offset(offset)
    )
    return [(row[0], bool(row[1])) for row in (await session.execute(stmt)).all()]
