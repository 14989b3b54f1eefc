"""Making a race happen on purpose, without timing luck.

The test's own session holds the row (PostgreSQL: SELECT ... FOR UPDATE; SQLite: the
write lock its transaction takes), the requests are started one by one, and each is
known to be waiting on that lock (:class:`LockWaits`) before the next starts and before
the hold is released. PostgreSQL then hands the row to the waiters in the order they
came; SQLite runs them one at a time in an order of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from types import TracebackType
from typing import Any

import httpx
from sqlalchemy import event, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.web.app_state import app_state
from tests.waiting import until

WAITING = text(
    "SELECT count(*) FROM pg_stat_activity "
    "WHERE datname = current_database() AND wait_event_type = 'Lock'"
)

# SQLite's writers start with it (db/engine.py); it returns once the write lock is theirs.
_TAKES_THE_WRITE_LOCK = "BEGIN IMMEDIATE"


async def hold(session: AsyncSession, model: Any, ident: object) -> None:
    """Lock ``model``'s row ``ident`` until ``session`` commits."""
    await session.execute(select(model).where(model.id == ident).with_for_update())


class LockWaits:
    """The app's connections waiting on a lock the test holds, counted from the database's
    own account where it gives one.

    PostgreSQL: the backends of this database whose wait is a lock (pg_stat_activity).
    SQLite tells nobody who waits in its busy handler, so the app's engine is watched from
    when this is entered: a BEGIN IMMEDIATE sent and not yet answered is a writer waiting
    for the write lock, as long as the test holds it. Enter it after taking the hold."""

    def __init__(self, app: Any) -> None:
        self.engine = app_state(app).engine
        self.postgres = self.engine.dialect.name == "postgresql"
        self.in_flight = 0

    def __enter__(self) -> LockWaits:
        if not self.postgres:
            for name, listener in self._listeners():
                event.listen(self.engine.sync_engine, name, listener)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, _e: BaseException | None, _t: TracebackType | None
    ) -> None:
        if not self.postgres:
            for name, listener in self._listeners():
                event.remove(self.engine.sync_engine, name, listener)

    def _listeners(self) -> list[tuple[str, Any]]:
        return [
            ("before_cursor_execute", self._sent),
            ("after_cursor_execute", self._answered),
            ("handle_error", self._failed),
        ]

    def _sent(self, _conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.startswith(_TAKES_THE_WRITE_LOCK):
            self.in_flight += 1

    def _answered(self, _conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.startswith(_TAKES_THE_WRITE_LOCK):
            self.in_flight -= 1

    def _failed(self, context: Any) -> None:
        if (context.statement or "").startswith(_TAKES_THE_WRITE_LOCK):
            self.in_flight -= 1

    async def count(self) -> int:
        if not self.postgres:
            return self.in_flight
        async with self.engine.connect() as conn:  # a connection of its own, beside the app's
            return int((await conn.execute(WAITING)).scalar_one())

    async def reach(self, count: int, timeout: float = 30.0) -> None:
        """Returns once ``count`` connections wait on the lock; fails saying how many did."""
        seen = [0]

        async def enough() -> bool:
            seen[0] = await self.count()
            return seen[0] >= count

        await until(
            enough,
            lambda: f"{count} connections waiting on the held lock, saw {seen[0]}",
            timeout=timeout,
        )


async def in_order(
    app: Any,
    session: AsyncSession,
    model: Any,
    ident: object,
    *requests: Awaitable[httpx.Response],
) -> list[httpx.Response]:
    """Send ``requests`` while the row is held, each queued behind the one before,
    then release the row and collect the answers in the order given."""
    tasks = []
    await hold(session, model, ident)
    try:
        with LockWaits(app) as waits:
            for n, request in enumerate(requests, start=1):
                tasks.append(asyncio.ensure_future(request))
                await waits.reach(n)
    finally:
        await session.commit()
    return list(await asyncio.gather(*tasks))
