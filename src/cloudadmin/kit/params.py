"""Reusable query parameter types."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import Query
from pydantic import BeforeValidator

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
