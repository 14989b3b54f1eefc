"""The order of a cloud list by time (tasks, user actions): ``order_by``, and
``sorting``, the provider's former name for it, still read (deprecated in the API's
document)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query

Order = Literal["asc", "desc"]
Sorting = Annotated[Order | None, Query(deprecated=True, description="Use `order_by`.")]


def chosen(order_by: Order | None, sorting: Order | None) -> Order:
    """``order_by``, else ``sorting``; newest first when neither is given."""
    return order_by or sorting or "desc"
