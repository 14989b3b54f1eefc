"""Foreign keys are checked at commit, so a load may insert records in any order."""

from __future__ import annotations

from typing import Annotated, Any

from sqlalchemy import ForeignKey, Integer
from sqlalchemy.orm import mapped_column


def fk(target: str, **kw: Any) -> ForeignKey:
    return ForeignKey(target, deferrable=True, initially="DEFERRED", **kw)


# An account's id in the rows it owns, indexed: they are read by their account.
AccountRef = Annotated[int, mapped_column(Integer, fk("clients.id"), index=True)]
