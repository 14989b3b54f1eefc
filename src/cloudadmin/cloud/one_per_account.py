"""An account has at most one subscription of each kind, AMQP and webhook."""

from __future__ import annotations

from typing import Protocol

from cloudadmin.errors import Conflict


class _Subscription(Protocol):
    @property
    def id(self) -> int: ...


def refuse_another(existing: _Subscription | None, kind: str, advice: str) -> None:
    """A Conflict when the account already has its subscription of ``kind``; ``advice``
    says what to do instead."""
    if existing is not None:
        raise Conflict(f"The account already has {kind} subscription {existing.id}; {advice}")
