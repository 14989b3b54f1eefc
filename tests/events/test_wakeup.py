"""The dispatcher wakes when the outbox gets work instead of polling (events/wakeup.py):
a commit in this process, PostgreSQL's NOTIFY from any; and an idle one stays quiet."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import event, insert, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.dialect import notify
from cloudadmin.db.models import DeliveryState, EventDelivery, UserActionEvent
from cloudadmin.db.types import utcnow
from cloudadmin.events.dispatcher import Dispatcher
from cloudadmin.events.wakeup import CHANNEL, outbox_written, subscribe_local
from cloudadmin.web.app_state import app_state
from tests.events.conftest import Inbox
from tests.events.helpers import make_subscription
from tests.factories import Landscape, auth, make_client
from tests.waiting import until

SELLERS = "/iam/admin/sellers"
NEVER = 3600.0  # a poll interval no test waits for: only a wake-up can deliver in time


@contextlib.asynccontextmanager
async def running(app: FastAPI, **intervals: float) -> AsyncIterator[Dispatcher]:
    """A dispatcher running on the test database, started and idle."""
    options: dict[str, Any] = {
        "poll_seconds": NEVER,
        "idle_poll_seconds": NEVER,
        "idle_backoff_max_seconds": NEVER,
        **intervals,
    }
    d = Dispatcher(
        app_state(app).engine,
        app_state(app).secret_box,
        lanes=2,
        outbound=app_state(app).outbound,
        **options,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(d.run(stop))
    try:
        await until(lambda: d.waker.looks >= 1, "the dispatcher to start", timeout=30)
        yield d
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


async def owe_one(session: AsyncSession, subscription_id: int, n: int = 1) -> None:
    """An event owed to ``subscription_id`` written straight into the outbox, as a process
    that does not wake this one would."""
    event_id = f"00000000-0000-4000-8000-{n:012d}"
    row = (
        await session.execute(
            insert(UserActionEvent)
            .values(
                event_id=event_id,
                client_id=1,
                reseller_id=None,
                body={"id": event_id, "n": n},
                created_at=utcnow(),
            )
            .returning(UserActionEvent.id)
        )
    ).scalar_one()
    await session.execute(
        insert(EventDelivery).values(event_id=row, subscription_id=subscription_id, delivered=False)
    )


class TestWakeUp:
    async def test_a_commit_in_this_process_wakes_it(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        inbox: Inbox,
        rabbit_url: str,
    ):
        await make_subscription(
            session,
            app_state(app).secret_box,
            ls.reseller_account,
            rabbit_url,
            exchange=inbox.exchange,
            routing_key=inbox.routing_key,
        )
        async with running(app):
            r = await client.post(
                SELLERS,
                json={"email": "w@sales.example", "full_name": "W"},
                headers=auth(ls.reseller),
            )
            assert r.status_code == 200
            got = await inbox.drain(1, timeout=30, why="not woken by the commit")
        assert len(got) == 1, "not woken by the commit"

    async def test_notify_wakes_it_on_postgresql(
        self,
        app: FastAPI,
        session: AsyncSession,
        inbox: Inbox,
        rabbit_url: str,
        dialect: str,
    ):
        if dialect != "postgresql":
            pytest.skip("SQLite has no notifications")
        account = await make_client(session)
        sub = await make_subscription(
            session,
            app_state(app).secret_box,
            account,
            rabbit_url,
            exchange=inbox.exchange,
            routing_key=inbox.routing_key,
        )
        async with running(app):
            await owe_one(session, sub.id)
            await notify(session, CHANNEL)  # NOTIFY alone: nothing in this process is told
            await session.commit()
            got = await inbox.drain(1, timeout=30, why="not woken by NOTIFY")
        assert len(got) == 1, "not woken by NOTIFY"

    async def test_it_listens_again_after_losing_the_connection(
        self,
        app: FastAPI,
        session: AsyncSession,
        inbox: Inbox,
        rabbit_url: str,
        dialect: str,
    ):
        if dialect != "postgresql":
            pytest.skip("SQLite has no notifications")
        account = await make_client(session)
        sub = await make_subscription(
            session,
            app_state(app).secret_box,
            account,
            rabbit_url,
            exchange=inbox.exchange,
            routing_key=inbox.routing_key,
        )
        # Without its LISTEN it polls (0.05 s, up to 0.2 s) and reconnects meanwhile.
        async with running(app, poll_seconds=0.05, idle_backoff_max_seconds=0.2) as d:
            assert d.listener is not None
            first = d.listener.server_pid
            assert first is not None
            await session.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": first})
            await session.commit()

            def again() -> bool:
                pid = d.listener.server_pid if d.listener else None
                return pid is not None and pid != first

            await until(again, "the LISTEN connection to be reopened", timeout=30)
            await owe_one(session, sub.id)
            await notify(session, CHANNEL)
            await session.commit()
            got = await inbox.drain(1, timeout=30, why="not woken by NOTIFY after reconnecting")
        assert len(got) == 1, "not woken by NOTIFY after reconnecting"

    async def test_a_due_retry_wakes_it(
        self,
        app: FastAPI,
        session: AsyncSession,
        inbox: Inbox,
        rabbit_url: str,
    ):
        account = await make_client(session)
        sub = await make_subscription(
            session,
            app_state(app).secret_box,
            account,
            rabbit_url,
            exchange=inbox.exchange,
            routing_key=inbox.routing_key,
        )
        await owe_one(session, sub.id)
        session.add(
            DeliveryState(
                subscription_id=sub.id, attempts=1, next_attempt_at=utcnow() + timedelta(seconds=1)
            )
        )
        await session.commit()
        async with running(app):
            got = await inbox.drain(1, timeout=30, why="the retry's due time did not wake it")
        assert len(got) == 1, "the retry's due time did not wake it"


class CountedEvent(asyncio.Event):
    """An event that counts how often it was set."""

    def __init__(self) -> None:
        super().__init__()
        self.sets = 0

    def set(self) -> None:
        self.sets += 1
        super().set()


class TestAfterCommitOnly:
    async def test_rollback_wakes_nobody_commit_does(self, app: FastAPI):
        woken = CountedEvent()
        unsubscribe = subscribe_local(woken)
        try:
            async with app_state(app).sessionmaker() as s:
                await outbox_written(s)
                await s.rollback()
            async with app_state(app).sessionmaker() as s:
                await outbox_written(s)
                assert woken.sets == 0  # not before the rows are visible
                await s.commit()
            await asyncio.wait_for(woken.wait(), 10)
            # Wake-ups arrive in order: one from the rollback would have come first.
            assert woken.sets == 1, "the rolled back transaction woke the dispatcher"
        finally:
            unsubscribe()


LOOKS = 5  # the waker's looks counted in an idle dispatcher
LONGEST = 0.16  # the idle poll's longest wait


class TestIdle:
    async def test_an_idle_dispatcher_only_looks_at_its_poll(self, app: FastAPI, dialect: str):
        """An idle dispatcher's only statements are the waker's looks, one statement each,
        and the looks are far apart: on PostgreSQL (LISTENing) one per fallback poll
        however short ``poll_seconds``; on SQLite a poll backing off from 0.02 s to its
        longest (the old polling took over a thousand statements in three seconds)."""
        statements: list[str] = []

        def count(_conn: Any, _cursor: Any, sql: str, *_args: Any) -> None:
            statements.append(sql)

        listening = dialect == "postgresql"
        async with running(
            app,
            poll_seconds=0.02,
            idle_backoff_max_seconds=LONGEST,
            idle_poll_seconds=LONGEST if listening else NEVER,
        ) as d:

            def idle() -> bool:
                # Every lane waits for the doorbell; four looks back off the poll fully.
                lanes_waiting = d.bell.idle + d.mail_bell.idle
                return lanes_waiting == d.lanes + 1 and d.waker.cycles >= 4

            await until(
                idle,
                lambda: (
                    f"the dispatcher idle: {d.bell.idle + d.mail_bell.idle} of "
                    f"{d.lanes + 1} lanes waiting, {d.waker.cycles} of 4 looks"
                ),
                timeout=30,
            )
            engine = app_state(app).engine.sync_engine
            event.listen(engine, "before_cursor_execute", count)
            looked, started = d.waker.cycles, time.monotonic()
            try:
                await until(
                    lambda: d.waker.cycles >= looked + LOOKS,
                    lambda: f"{LOOKS} looks, {d.waker.cycles - looked} seen",
                    timeout=30,
                )
            finally:
                event.remove(engine, "before_cursor_execute", count)
            elapsed = time.monotonic() - started
        # The look under way when counting began may be in.
        assert LOOKS - 1 <= len(statements) <= LOOKS + 1, statements
        assert len(set(statements)) == 1, "the lanes queried while idle"
        # After the first (already under way), each look waited the longest poll.
        assert elapsed >= (LOOKS - 1) * LONGEST * 0.9, f"{LOOKS} looks in {elapsed:.2f} s"
        assert d.delivery.delivered_count == 0


class TestNextDue:
    async def test_now_later_or_never(self, app: FastAPI, session: AsyncSession, rabbit_url: str):
        d = Dispatcher(app_state(app).engine, app_state(app).secret_box)
        assert await d.next_due() is None  # nothing owed
        account = await make_client(session)
        sub = await make_subscription(
            session, app_state(app).secret_box, account, rabbit_url, exchange="x", routing_key="y"
        )
        await owe_one(session, sub.id)
        await session.commit()
        due = await d.next_due()
        assert due is not None and due <= utcnow()  # never tried: now
        later = utcnow() + timedelta(seconds=100)
        session.add(DeliveryState(subscription_id=sub.id, attempts=3, next_attempt_at=later))
        await session.commit()
        assert await d.next_due() == later  # backing off
        lease_end = utcnow() + timedelta(seconds=50)
        await session.execute(
            update(DeliveryState).values(
                next_attempt_at=None, lease_owner="other", lease_until=lease_end
            )
        )
        await session.commit()
        assert await d.next_due() == lease_end  # another worker holds it
        await session.execute(update(EventDelivery).values(delivered=True))
        await session.commit()
        assert await d.next_due() is None
