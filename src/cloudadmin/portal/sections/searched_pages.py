"""A searched list shown a page at a time (the users' list, the sellers'): the page's
rows, past the end the last page's, and the links to the pages beside it, with the
search kept in them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

from cloudadmin.kit.pagination import Paging

PAGE_SIZE = 25


def page_link(base: str, filters: dict[str, str], page: int | None = None) -> str:
    params = dict(filters)
    if page is not None and page > 1:
        params["page"] = str(page)
    return base + ("?" + urlencode(params) if params else "")


async def searched_page(
    base: str,
    filters: dict[str, str],
    number: int,
    search: Callable[[Paging], Awaitable[tuple[int, Any]]],
) -> dict[str, Any]:
    """Page ``number`` of what ``search`` finds (its count and a page's rows), as the
    list templates' values: found, count, page, pages, previous and next."""

    def paging(number: int) -> Paging:
        return Paging(limit=PAGE_SIZE, offset=(number - 1) * PAGE_SIZE)

    total, found = await search(paging(number))
    pages = max(1, -(-total // PAGE_SIZE))
    if number > pages:  # past the end: the last page
        number = pages
        total, found = await search(paging(number))
    return {
        "found": found,
        "count": total,
        "page": number,
        "pages": pages,
        "previous": page_link(base, filters, number - 1) if number > 1 else "",
        "next": page_link(base, filters, number + 1) if number < pages else "",
    }
