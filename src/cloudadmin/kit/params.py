"""Reusable query parameter types."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends, Query
from pydantic import BeforeValidator

from cloudadmin.kit.ints import PageOffset
from cloudadmin.kit.pagination import Paging
from cloudadmin.kit.timeparse import parse_instant


def _instant(value: Any) -> Any:
    if isinstance(value, str):
        return parse_instant(value)
    return value


InstantQuery = Annotated[
    datetime | None,
    BeforeValidator(_instant),
    Query(description="UTC instant: 2025-05-15T12:00:00Z or 2025-05-15 12:00:00."),
]


def limit_query(description: str) -> Any:
    """``limit`` of a list answered whole without it: 1 to 1000 items a page."""
    return Query(ge=1, le=1000, description=description)


OffsetQuery = Annotated[
    PageOffset, Query(description="Offset relative to the beginning of the list.")
]


def _whole_list_paging(
    limit: Annotated[
        int | None,
        limit_query("The maximum number of items; without it the whole list is answered."),
    ] = None,
    offset: OffsetQuery = 0,
) -> Paging:
    return Paging(limit, offset)


# ``limit`` and ``offset`` of a list answered whole without ``limit`` (users, sellers,
# notification settings); how the whole list is shaped is the operation's to say.
WholeListPage = Annotated[Paging, Depends(_whole_list_paging)]


def ordering_query(fields: str, example: str) -> Any:
    """``ordering`` of a list sortable by ``fields`` (kit/ordering.py)."""
    return Query(
        description=f"{fields}; a leading minus means descending; comma separated or "
        "repeated. Ties are broken by id.",
        examples=[example],
    )
