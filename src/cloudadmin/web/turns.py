"""Requests take turns at the database: at most one per pooled connection at a time.

SQLAlchemy's async pool hands a returned connection to whoever asks first; a request
woken for it may find it taken by a newcomer and queue again at the back. Under
saturation (64 concurrent requests on 10 connections) that left some requests waiting
over a second while the median waited 90 ms. An asyncio.Semaphore serves its waiters in
arrival order, so requests wait for a turn here, and then find the pool free.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from cloudadmin.errors import ServiceUnavailable
from cloudadmin.observability.metrics import DB_CONNECTIONS_IN_USE, DB_REQUESTS_WAITING


class Turns:
    def __init__(self, size: int, timeout: float) -> None:
        self._slots = asyncio.Semaphore(size)
        self._timeout = timeout

    @asynccontextmanager
    async def turn(self) -> AsyncIterator[None]:
        # Counted as waiting only when it has to (every connection is held): the gauges
        # are what /metrics shows of the pool's saturation.
        if self._slots.locked():
            await self._wait()
        else:
            await self._slots.acquire()  # a free turn: taken at once, nothing to time
        DB_CONNECTIONS_IN_USE.inc()
        try:
            yield
        finally:
            DB_CONNECTIONS_IN_USE.dec()
            self._slots.release()

    async def _wait(self) -> None:
        DB_REQUESTS_WAITING.inc()
        try:
            async with asyncio.timeout(self._timeout):
                await self._slots.acquire()
        except TimeoutError:
            raise ServiceUnavailable("The database is busy.") from None
        finally:
            DB_REQUESTS_WAITING.dec()
