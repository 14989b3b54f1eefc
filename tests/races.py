"""Making a race happen on purpose, without timing luck.

The test's own session holds the row (PostgreSQL: SELECT ... FOR UPDATE; SQLite: the
write lock its transaction takes), the requests are started one by one, and each is
known to be waiting on that lock (PostgreSQL's pg_stat_activity) before the next starts
and before the hold is released. PostgreSQL then hands the row to the waiters in the
order they came; SQLite runs them one at a time in an order of its own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any

import httpx
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.app_state import app_state

WAITING = text(
    "SELECT count(*) FROM pg_stat_activity "
    "WHERE datname = current_database() AND wait_event_type = 'Lock'"
)


async def hold(session: AsyncSession, model: Any, ident: object) -> None:
    """Lock ``model``'s row ``ident`` until ``session`` commits."""
    await session.execute(select(model).where(model.id == ident).with_for_update())


async def waiting(app: Any, count: int, deadline: float = 30.0) -> None:
    """Return once ``count`` requests wait on a lock (PostgreSQL); on SQLite, once
    the requests had a chance to start (their order is SQLite's anyway)."""
    engine = app_state(app).read_engine
    if engine.dialect.name != "postgresql":
        for _ in range(20):
            await asyncio.sleep(0.01)
        return
    until = time.monotonic() + deadline
    seen = -1
    while time.monotonic() < until:
        async with engine.connect() as conn:
            seen = int((await conn.execute(WAITING)).scalar_one())
        if seen >= count:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"expected {count} requests waiting on a lock, saw {seen}")


async def in_order(
    app: Any,
    session: AsyncSession,
    model: Any,
    ident: object,
    *requests: Awaitable[httpx.Response],
) -> list[httpx.Response]:
    """Send ``requests`` while the row is held, each queued behind the one before,
    then release the row and collect the answers in the order given."""
    await hold(session, model, ident)
    tasks = []
    try:
        for n, request in enumerate(requests, start=1):
            tasks.append(asyncio.ensure_future(request))
            await waiting(app, n)
    finally:
        await session.commit()
    return list(await asyncio.gather(*tasks))
