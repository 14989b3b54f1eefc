"""The provider's paginated envelope: ``{count, next, previous, results}``.

The provider types ``next`` and ``previous`` as strings, not nullable: a link that does
not exist (the first or last page, or a list asked for without ``limit``) is left out
of the answer rather than sent as null.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema


def absent(value: object) -> bool:
    """For `Field(exclude_if=absent)`: a field without a value is left out."""
    return value is None


# A string, left out of the answer when there is none.
OptionalLink = Annotated[str | SkipJsonSchema[None], Field(exclude_if=absent)]


class LinkedPage(BaseModel):
    """Subclasses add ``results``."""

    count: int = Field(description="Total number of items.")
    next: OptionalLink = Field(default=None, description="URL of the next page.")
    previous: OptionalLink = Field(default=None, description="URL of the previous page.")
