"""Foreign keys are checked at commit, so a load may insert records in any order."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ForeignKey


def fk(target: str, **kw: Any) -> ForeignKey:
    return ForeignKey(target, deferrable=True, initially="DEFERRED", **kw)
