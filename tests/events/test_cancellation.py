"""A dispatcher that stops (the stop, a lost lock) lets each lane finish its pass, so a
batch its destination took while the database was away is marked once the database
returns, not sent again; cancellation, when it comes, always wins, whatever error a
lane's cleanup raises on a dead connection; and a dispatcher that lost its database
takes its lock back and delivers again once it returns."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fastapi import FastAPI
from prometheus_client import REGISTRY
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.config import Settings
from cloudadmin.db.engine import create_engine
from cloudadmin.events.dispatcher import Dispatcher
from cloudadmin.events.lanes import Doorbell
from cloudadmin.web.app_state import app_state
from tests.cutproxy import CutProxy, cut_proxy
from tests.events.receiver import Receiver
from tests.events.test_webhooks import act, make_webhook
from tests.factories import Landscape
from tests.waiting import until


class GatedReceiver(Receiver):
    """A webhook receiver that holds every request until ``gate`` is set: the dispatcher
    is then in the middle of a batch for as long as the test wants."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.arrived = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.arrived += 1
            await self.gate.wait()
        await super().__call__(scope, receive, send)

    def ids(self) -> set[str]:
        return {r.headers["x-message-id"] for r in self.accepted}


@pytest.fixture
async def gated() -> AsyncIterator[GatedReceiver]:
    r = GatedReceiver()
    await r.start()
    yield r
    r.gate.set()
    await r.stop()


class TestLaneEnds:
    async def test_an_error_while_unwinding_does_not_hide_the_cancellation(self, app: FastAPI):
        # A pass cancelled mid-batch whose cleanup fails (a release on a dead connection
        # raises): the lane ends, cancelled, instead of waiting for work as if it failed.
        d = Dispatcher(app_state(app).engine, app_state(app).secret_box)
        inside = asyncio.Event()

        async def work() -> bool:
            inside.set()
            try:
                await asyncio.Event().wait()
            finally:
                raise ConnectionResetError("the release met a dead connection")
            return True

        lane = asyncio.create_task(d._lane(work, Doorbell()))
        await asyncio.wait_for(inside.wait(), 10)
        lane.cancel()
        done, _ = await asyncio.wait([lane], timeout=10)
        assert done, "the lane did not end when cancelled"
        assert lane.cancelled()


async def _dispatcher_through(proxy: CutProxy, settings: Settings, app: FastAPI) -> Dispatcher:
    engine = create_engine(settings, url=proxy.url(settings.effective_database_url))
    d = Dispatcher(
        engine,
        app_state(app).secret_box,
        lanes=2,
        poll_seconds=0.05,
        outbound=app_state(app).outbound,
        exclusive=True,  # `serve`'s: it holds the advisory lock, and can lose it
    )
    d.lock.retry_seconds = 0.2  # takes its lock back soon after the database returns
    return d


class TestDatabaseCut:
    async def test_a_batch_taken_during_the_cut_is_marked_once_it_returns_and_not_sent_again(
        self,
        app: FastAPI,
        session: AsyncSession,
        settings: Settings,
        ls: Landscape,
        gated: GatedReceiver,
        dialect: str,
    ):
        if dialect != "postgresql":
            pytest.skip("the lock that a cut connection loses is PostgreSQL's")
        await make_webhook(session, app_state(app).secret_box, ls.client_account, gated.url)
        with cut_proxy(settings.effective_database_url) as proxy:
            d = await _dispatcher_through(proxy, settings, app)
            stop = asyncio.Event()
            running = asyncio.create_task(d.run(stop))
            try:
                first = set(await act(session, ls.client_account))
                # A lane is in the middle of its batch, its lease taken, when the
                # database goes and the lock's connection with it.
                await until(lambda: gated.arrived >= 1, "the dispatcher to post the event")
                proxy.cut()
                await until(d.lock.lost.is_set, "the dispatcher to see its lock lost")
                # The receiver takes the batch while the database is away: the lane
                # finishes its pass and marks the batch once the database is back,
                # rather than being cut short and leaving it to be sent again.
                gated.gate.set()
                await until(
                    lambda: first <= gated.ids(),
                    lambda: f"the receiver to take the batch, {len(first - gated.ids())} missing",
                )
                proxy.restore()
                # The dispatcher takes its lock back and delivers what comes next.
                owed = first | set(await act(session, ls.client_account))
                await until(
                    lambda: owed <= gated.ids(),
                    lambda: f"every event after the cut, {len(owed - gated.ids())} missing",
                    timeout=60,
                )
                await until(lambda: d.watchdog.dispatching, "the dispatcher at work again")
            finally:
                stop.set()
                await asyncio.wait_for(running, 30)
                await d.webhooks.close()
                await d.engine.dispose()
        sent = Counter(r.headers["x-message-id"] for r in gated.accepted)
        assert {i: n for i, n in sent.items() if n > 1} == {}, "sent again after the cut"

    async def test_a_stop_ends_a_pass_whose_receiver_never_answers(
        self, app: FastAPI, session: AsyncSession, ls: Landscape, gated: GatedReceiver
    ):
        # The stop lets a lane finish its pass, but a pass has a bound: a destination
        # that never answers is given up within the lease, and the dispatcher ends.
        await make_webhook(session, app_state(app).secret_box, ls.client_account, gated.url)
        d = Dispatcher(
            app_state(app).engine,
            app_state(app).secret_box,
            lanes=1,
            poll_seconds=0.05,
            lease_seconds=2,
            outbound=app_state(app).outbound,
        )
        stop = asyncio.Event()
        running = asyncio.create_task(d.run(stop))
        try:
            await act(session, ls.client_account)
            await until(lambda: gated.arrived >= 1, "the dispatcher to post the event")
            stop.set()
            await until(lambda: running.done(), "the dispatcher to end", timeout=60)
        finally:
            stop.set()
            await asyncio.wait_for(running, 30)
            await d.webhooks.close()
        assert not gated.accepted  # the receiver never answered: nothing was taken


class TestWatchdog:
    async def test_stuck_lanes_with_events_due_are_reported(
        self,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        gated: GatedReceiver,
        caplog: pytest.LogCaptureFixture,
    ):
        # One lane, held by a receiver that does not answer yet, and a second
        # subscription's event due that no lane takes: no pass ends while work is due.
        # The watchdog says so in the log and in /metrics' gauge.
        box = app_state(app).secret_box
        for account in (ls.client_account, ls.reseller_account):
            await make_webhook(session, box, account, gated.url)
        d = Dispatcher(
            app_state(app).engine,
            box,
            lanes=1,
            poll_seconds=0.05,
            outbound=app_state(app).outbound,
            stall_seconds=0.5,
        )
        caplog.set_level(logging.WARNING, "cloudadmin.dispatcher")
        stop = asyncio.Event()
        running = asyncio.create_task(d.run(stop))
        try:
            owed = set(await act(session, ls.client_account))
            owed |= set(await act(session, ls.reseller_account))
            await until(lambda: gated.arrived >= 1, "the dispatcher to post an event")
            await until(
                lambda: d.watchdog.stalled, "the watchdog to see the lanes stuck", timeout=30
            )
            assert _gauge("cloudadmin_dispatcher_stalled") == 1
            assert _gauge("cloudadmin_dispatcher_active") == 1
            warned = [r for r in caplog.records if "finished no delivery pass" in r.message]
            assert len(warned) == 1, [r.message for r in caplog.records]
            before = _gauge("cloudadmin_dispatcher_last_progress_timestamp_seconds")
            gated.gate.set()
            await until(lambda: owed <= gated.ids(), "both events once the receiver answers")
            await until(lambda: not d.watchdog.stalled, "the watchdog to see the lanes move again")
            assert _gauge("cloudadmin_dispatcher_stalled") == 0
            assert _gauge("cloudadmin_dispatcher_last_progress_timestamp_seconds") > before
        finally:
            stop.set()
            await asyncio.wait_for(running, 30)
            await d.webhooks.close()
        assert _gauge("cloudadmin_dispatcher_active") == 0

    async def test_an_idle_dispatcher_is_not_reported(
        self, app: FastAPI, caplog: pytest.LogCaptureFixture
    ):
        # Nothing owed: no pass for a long while is no stall.
        d = Dispatcher(
            app_state(app).engine, app_state(app).secret_box, poll_seconds=0.05, stall_seconds=0.2
        )
        caplog.set_level(logging.WARNING, "cloudadmin.dispatcher")
        stop = asyncio.Event()
        running = asyncio.create_task(d.run(stop))
        try:
            await until(lambda: d.watchdog.dispatching, "the dispatcher to start")
            # An absence: three stall periods pass (the watchdog checks four times each).
            checked = d.watchdog.checks
            await until(lambda: d.watchdog.checks >= checked + 12, "12 more watchdog checks")
            assert not d.watchdog.stalled
            assert not [r for r in caplog.records if "finished no delivery pass" in r.message]
        finally:
            stop.set()
            await asyncio.wait_for(running, 30)


def _gauge(name: str) -> float:
    value = REGISTRY.get_sample_value(name)
    assert value is not None, f"{name} is not exposed"
    return value
