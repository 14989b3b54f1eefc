"""Conditions of the lists' filters, the slice of a list a page shows, and its count."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, FromClause, Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import QueryableAttribute

from cloudadmin.db.base import Base
from cloudadmin.kit.pagination import Paging

_Stmt = TypeVar("_Stmt", bound="Select[*tuple[Any, ...]]")


def equal_where_given(*pairs: tuple[QueryableAttribute[Any], Any]) -> list[ColumnElement[bool]]:
    """``column == value`` for each ``(column, value)`` whose value was given: a list's
    exact-match filters, where None means "not filtered"."""
    return [column == value for column, value in pairs if value is not None]


def in_where_given(
    *pairs: tuple[QueryableAttribute[Any], Sequence[Any]],
) -> list[ColumnElement[bool]]:
    """``column IN values`` for each ``(column, values)`` whose values were given: a
    list's any-of filters, where an empty sequence means "not filtered"."""
    return [column.in_(list(values)) for column, values in pairs if values]


def within_given(
    column: QueryableAttribute[Any], start: Any | None, end: Any | None
) -> list[ColumnElement[bool]]:
    """``start <= column <= end``, either bound left out when not given."""
    bounds = []
    if start is not None:
        bounds.append(column >= start)
    if end is not None:
        bounds.append(column <= end)
    return bounds


def sliced(stmt: _Stmt, page: Paging) -> _Stmt:
    """The rows of ``stmt`` that ``page`` asks for."""
    stmt = stmt.offset(page.offset)
    return stmt if page.limit is None else stmt.limit(page.limit)


async def count_rows(
    session: AsyncSession, source: type[Base] | FromClause, *where: ColumnElement[bool]
) -> int:
    """``SELECT count(*) FROM source WHERE where``: how long a list is, of which a page
    shows a slice. ``source`` is a model, or the subquery of a list's statement."""
    stmt = select(func.count()).select_from(source).where(*where)
    return int((await session.execute(stmt)).scalar_one())
