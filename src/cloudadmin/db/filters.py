"""Conditions of the lists' filters."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement
from sqlalchemy.orm import QueryableAttribute


def equal_where_given(*pairs: tuple[QueryableAttribute[Any], Any]) -> list[ColumnElement[bool]]:
    """``column == value`` for each ``(column, value)`` whose value was given: a list's
    exact-match filters, where None means "not filtered"."""
    return [column == value for column, value in pairs if value is not None]
