"""On SQLite one dispatcher per database; on PostgreSQL every process dispatches."""

from __future__ import annotations

import asyncio
import contextlib

from fastapi import FastAPI

from cloudadmin.events.dispatcher import Dispatcher


class TestDispatcherLock:
    async def test_second_dispatcher_waits_for_the_first(self, app: FastAPI, dialect: str):
        first = Dispatcher(app.state.engine, app.state.secret_box)
        second = Dispatcher(app.state.engine, app.state.secret_box)
        stop = asyncio.Event()
        with contextlib.ExitStack() as held_first, contextlib.ExitStack() as held_second:
            assert await first._single_dispatcher_lock(stop, held_first) is True
            waiting = asyncio.create_task(second._single_dispatcher_lock(stop, held_second))
            await asyncio.sleep(0.3)
            if dialect == "postgresql":
                assert waiting.done() and waiting.result() is True  # SKIP LOCKED shares work
                return
            assert not waiting.done()
            held_first.close()  # the first dispatcher's process ends
            assert await asyncio.wait_for(waiting, 10) is True

    async def test_stopping_while_waiting(self, app: FastAPI, dialect: str):
        if dialect == "postgresql":
            return
        first = Dispatcher(app.state.engine, app.state.secret_box)
        second = Dispatcher(app.state.engine, app.state.secret_box)
        stop_first, stop_second = asyncio.Event(), asyncio.Event()
        with contextlib.ExitStack() as held_first:
            assert await first._single_dispatcher_lock(stop_first, held_first)
            waiting = asyncio.create_task(second.run(stop_second))
            await asyncio.sleep(0.2)
            stop_second.set()
            await asyncio.wait_for(waiting, 10)
            assert second.delivered_count == 0
