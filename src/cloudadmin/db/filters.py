"""Conditions of the lists' filters, and the slice of a list a page shows."""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Select
from sqlalchemy.orm import QueryableAttribute

_Stmt = TypeVar("_Stmt", bound="Select[*tuple[Any, ...]]")


def equal_where_given(*pairs: tuple[QueryableAttribute[Any], Any]) -> list[ColumnElement[bool]]:
    """``column == value`` for each ``(column, value)`` whose value was given: a list's
    exact-match filters, where None means "not filtered"."""
    return [column == value for column, value in pairs if value is not None]


def sliced(stmt: _Stmt, *, limit: int | None, offset: int) -> _Stmt:
    """``stmt`` from its row ``offset`` on, at most ``limit`` rows (all when None)."""
    stmt = stmt.offset(offset)
    return stmt if limit is None else stmt.limit(limit)
