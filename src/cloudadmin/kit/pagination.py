"""Limit/offset pages with absolute next/previous links."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.datastructures import URL


@dataclass(frozen=True, slots=True)
class Paging:
    """The slice of a list a request asks for: at most ``limit`` items (every item when
    None) from the ``offset``-th on."""

    limit: int | None
    offset: int

    def links(self, url: URL, *, count: int) -> tuple[str | None, str | None]:
        """The page's next and previous links; none for a whole list."""
        if self.limit is None:
            return None, None
        return page_links(url, count=count, limit=self.limit, offset=self.offset)


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
