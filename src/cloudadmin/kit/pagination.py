"""Limit/offset pages with absolute next/previous links."""

from __future__ import annotations

from starlette.datastructures import URL


def page_links(url: URL, *, count: int, limit: int, offset: int) -> tuple[str | None, str | None]:
    """Absolute next/previous URIs keeping every other query parameter; None at the ends."""
    nxt = None
    if offset + limit < count:
        nxt = str(url.include_query_params(limit=limit, offset=offset + limit))
    prev = None
    if offset > 0:
        prev_offset = max(offset - limit, 0)
        if prev_offset == 0:
            prev = str(url.include_query_params(limit=limit).remove_query_params("offset"))
        else:
            prev = str(url.include_query_params(limit=limit, offset=prev_offset))
    return nxt, prev
