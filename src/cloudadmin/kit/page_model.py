"""The provider's paginated envelope: ``{count, next, previous, results}``.

``next`` and ``previous`` are always in the answer, null where there is no such page
(the first or last page, or a list asked for without ``limit``): what DRF's limit/offset
pagination, the provider's framework, writes, and what a client's ``while
page["next"]:`` reads. The provider's schemas forget ``nullable`` on most of them; its
addendum list says "or null" (docs/conformance.md).
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class LinkedPage(BaseModel):
    """Subclasses add ``results`` (the activity log: ``result``)."""

    count: int = Field(description="Total number of items.")
    next: str | None = Field(description="URL of the next page; null on the last page.")
    previous: str | None = Field(description="URL of the previous page; null on the first page.")
