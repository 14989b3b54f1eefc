"""Queries of the activity log."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Query
from sqlalchemy import ColumnElement, Select, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from cloudadmin.db.filters import count_rows, equal_where_given
from cloudadmin.db.models import ActivityLogEntry
from cloudadmin.kit.ints import Id32Filter
from cloudadmin.kit.params import InstantQuery


@dataclass(frozen=True, slots=True)
class LogFilter:
    """The list's filters, each the query parameter of the same name: the endpoint takes
    the class as its dependency (``Depends()``), so the fields are declared once."""

    method: Annotated[str | None, Query(pattern=r"^[A-Za-z]{1,10}$")] = None
    path: Annotated[str | None, Query(max_length=2048)] = None
    status_code: Annotated[
        str | None, Query(pattern=r"^[1-5][0-9]{0,2}$", description="Prefix: 4, 40 or 404.")
    ] = None
    remote_ip_address: Annotated[str | None, Query(max_length=45)] = None
    user_id: Annotated[Id32Filter | None, Query()] = None
    token_id: Annotated[Id32Filter | None, Query()] = None
    client_id: Annotated[Id32Filter | None, Query(description="Operators only: one account.")] = (
        None
    )
    min_requested_at: InstantQuery = None
    max_requested_at: InstantQuery = None

    def conditions(self) -> list[ColumnElement[bool]]:
        t = ActivityLogEntry
        out = equal_where_given(
            (t.method, self.method.upper() if self.method else None),
            (t.path, self.path or None),
            (t.remote_ip_address, self.remote_ip_address or None),
            (t.user_id, self.user_id),
            (t.token_id, self.token_id),
            (t.client_id, self.client_id),
        )
        if self.status_code:
            # "4" -> 400..499, "40" -> 400..409, "404" -> 404: a range keeps it indexable.
            digits = len(self.status_code)
            low = int(self.status_code) * 10 ** (3 - digits)
            out.append(t.status_code.between(low, low + 10 ** (3 - digits) - 1))
        if self.min_requested_at is not None:
            out.append(t.requested_at >= self.min_requested_at)
        if self.max_requested_at is not None:
            out.append(t.requested_at <= self.max_requested_at)
        return out


def _filtered(scope: Sequence[ColumnElement[bool]], flt: LogFilter) -> Select[int]:
    return select(ActivityLogEntry.id).where(*scope, *flt.conditions())


async def count(session: AsyncSession, scope: Sequence[ColumnElement[bool]], flt: LogFilter) -> int:
    return await count_rows(session, _filtered(scope, flt).subquery())


async def page(
    session: AsyncSession,
    scope: Sequence[ColumnElement[bool]],
    flt: LogFilter,
    *,
    limit: int,
    offset: int,
) -> Sequence[ActivityLogEntry]:
    stmt = (
        select(ActivityLogEntry)
        .where(*scope, *flt.conditions())
        .order_by(ActivityLogEntry.id.desc())  # ids grow with time: newest first
        .limit(limit)
        .offset(offset)
    )
    return (await session.execute(stmt)).scalars().all()


async def get(
    session: AsyncSession, scope: Sequence[ColumnElement[bool]], entry_id: int
) -> ActivityLogEntry | None:
    stmt = select(ActivityLogEntry).where(ActivityLogEntry.id == entry_id, *scope)
    return (await session.execute(stmt)).scalar_one_or_none()


# The columns of an export, in the order of its header (the record's fields).
EXPORT_COLUMNS = (
    ActivityLogEntry.id,
    ActivityLogEntry.requested_at,
    ActivityLogEntry.client_id,
    ActivityLogEntry.user_id,
    ActivityLogEntry.user_email,
    ActivityLogEntry.token_id,
    ActivityLogEntry.actions,
    ActivityLogEntry.method,
    ActivityLogEntry.path,
    ActivityLogEntry.query_params,
    ActivityLogEntry.status_code,
    ActivityLogEntry.reverted,
    ActivityLogEntry.remote_ip_address,
    ActivityLogEntry.host,
    ActivityLogEntry.request_id,
    ActivityLogEntry.data,
)


async def export_batch(
    conn: AsyncConnection,
    scope: Sequence[ColumnElement[bool]],
    flt: LogFilter,
    *,
    before: int | None,
    limit: int,
) -> Sequence[Any]:
    """The next ``limit`` rows of an export, newest first, with ids below ``before``
    (keyset: each batch is one indexed read however far the export has gone)."""
    stmt = select(*EXPORT_COLUMNS).where(*scope, *flt.conditions())
    if before is not None:
        stmt = stmt.where(ActivityLogEntry.id < before)
    stmt = stmt.order_by(ActivityLogEntry.id.desc()).limit(limit)
    return (await conn.execute(stmt)).all()
