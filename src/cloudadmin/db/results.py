"""What the result of a data-changing statement tells, typed."""

from __future__ import annotations

from typing import Any

from sqlalchemy import CursorResult, Result


def rows_matched(result: Result[Any]) -> int:
    """How many rows an UPDATE or DELETE matched. AsyncSession.execute types every
    result as a Result; that of such a statement is a CursorResult, which counts them."""
    if not isinstance(result, CursorResult):
        raise TypeError(f"{type(result).__name__} does not count rows")
    return result.rowcount
