"""One dispatcher where one is enough (events/single.py): per SQLite database, per
`serve` on PostgreSQL; `worker` processes on PostgreSQL share the work instead."""

from __future__ import annotations

import asyncio

import pytest
from fastapi import FastAPI

from cloudadmin.events.dispatcher import Dispatcher
from cloudadmin.events.single import DispatcherLock
from cloudadmin.web.app_state import app_state
from tests.waiting import until


def lock(app: FastAPI, *, exclusive: bool) -> DispatcherLock:
    # Tries again every 0.1 s rather than every 5: the tests wait for the take-over.
    return DispatcherLock(app_state(app).engine, exclusive=exclusive, retry_seconds=0.1)


class TestDispatcherLock:
    async def test_second_dispatcher_waits_for_the_first(self, app: FastAPI):
        first, second = lock(app, exclusive=True), lock(app, exclusive=True)
        stop = asyncio.Event()
        try:
            assert await first.acquire(stop, "first") is True
            waiting = asyncio.create_task(second.acquire(stop, "second"))
            await until(lambda: second.refusals >= 3, "the second to be refused three times")
            assert not waiting.done(), "two dispatchers held the lock"
            await first.release()  # the first dispatcher's process ends
            assert await asyncio.wait_for(waiting, 30) is True
        finally:
            stop.set()
            await first.release()
            await second.release()

    async def test_workers_share_on_postgresql(self, app: FastAPI, dialect: str):
        if dialect != "postgresql":
            pytest.skip("SQLite allows one dispatcher per database, worker or not")
        first, second = lock(app, exclusive=False), lock(app, exclusive=False)
        stop = asyncio.Event()
        try:
            assert await first.acquire(stop, "first") is True
            # SKIP LOCKED shares the work: no lock to wait for.
            assert await asyncio.wait_for(second.acquire(stop, "second"), 5) is True
        finally:
            await first.release()
            await second.release()

    async def test_stopping_while_waiting(self, app: FastAPI):
        first = lock(app, exclusive=True)
        second = Dispatcher(app_state(app).engine, app_state(app).secret_box, exclusive=True)
        stop_first, stop_second = asyncio.Event(), asyncio.Event()
        try:
            assert await first.acquire(stop_first, "first")
            waiting = asyncio.create_task(second.run(stop_second))
            await until(lambda: second.lock.refusals >= 1, "the second to be refused the lock")
            stop_second.set()
            await asyncio.wait_for(waiting, 10)
            assert second.delivery.delivered_count == 0 and second.waker.looks == 0
        finally:
            await first.release()
