"""Watching an engine's pool: how many connections a request holds at once."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine


class Checkouts:
    """Connections checked out of ``engine``'s pool: now, and the most at once since
    :meth:`start` (counted above what was out then)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.now = 0
        self.base = 0
        self.peak = 0
        self.total = 0
        self.engine = engine
        event.listen(engine.sync_engine, "checkout", self._out)
        event.listen(engine.sync_engine, "checkin", self._in)

    def stop(self) -> None:
        """Stops watching (the engine outlives a test: tests/routed_apps.py)."""
        event.remove(self.engine.sync_engine, "checkout", self._out)
        event.remove(self.engine.sync_engine, "checkin", self._in)

    def _out(self, *_: Any) -> None:
        self.now += 1
        self.total += 1
        self.peak = max(self.peak, self.now)

    def _in(self, *_: Any) -> None:
        self.now -= 1

    def start(self) -> None:
        self.base = self.peak = self.now
        self.total = 0

    @property
    def most_at_once(self) -> int:
        return self.peak - self.base
