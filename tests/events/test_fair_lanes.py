"""One tenant's slow destination does not delay another's: slow destinations hold at most
half of the dispatcher's lanes, whatever their number (docs/events.md, "Slow
destinations"). The slow receivers here hold every request until the test lets them go,
so the fast tenant's delivery is a condition, not a race with the clock."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import WebhookDeliveryState
from cloudadmin.events.dispatcher import Dispatcher
from cloudadmin.web.app_state import app_state
from tests.events.receiver import Received, Receiver
from tests.events.test_webhooks import act, make_webhook, pending
from tests.factories import make_client
from tests.waiting import until

LANES = 4
SLOW_TENANTS = 6  # more than the lanes


@dataclass
class HeldReceiver(Receiver):
    """Takes each request in and answers 200 only once ``release`` is set; counts the
    requests it holds."""

    release: asyncio.Event = field(default_factory=asyncio.Event)
    arrived: int = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        raw = b""
        while True:
            message = await receive()
            raw += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.arrived += 1
        await self.release.wait()
        got = Received(scope["method"], scope["path"], {}, json.loads(raw) if raw else {})
        self.received.append(got)
        self.accepted.append(got)
        await send(
            {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"0")]}
        )
        await send({"type": "http.response.body", "body": b""})


async def test_a_fast_receiver_is_served_while_more_slow_ones_than_lanes_hold_theirs(
    app: FastAPI, session: AsyncSession
) -> None:
    box = app_state(app).secret_box
    # A long outbound timeout (and a lease that leaves a batch time for a request): the
    # slow receivers' requests do not end by themselves while the test runs.
    outbound = dataclasses.replace(app_state(app).outbound, timeout=60.0)
    dispatcher = Dispatcher(
        app_state(app).engine,
        box,
        lanes=LANES,
        poll_seconds=0.05,
        lease_seconds=300,
        outbound=outbound,
    )
    dispatcher.delivery.slow_seconds = 0.5
    release = asyncio.Event()
    slow = [HeldReceiver(release=release) for _ in range(SLOW_TENANTS)]
    fast = Receiver()
    for receiver in (*slow, fast):
        await receiver.start()
    stop = asyncio.Event()
    task: asyncio.Task[None] | None = None
    try:
        slow_sids, slow_ids = [], []
        for receiver in slow:
            account = await make_client(session)
            await session.commit()
            slow_sids.append(await make_webhook(session, box, account, receiver.url))
            slow_ids += await act(session, account, 2)
        fast_account = await make_client(session)
        await session.commit()
        fast_sid = await make_webhook(session, box, fast_account, fast.url)

        task = asyncio.create_task(dispatcher.run(stop))
        # Every lane has taken a slow tenant's request (before, they kept them all).
        await until(
            lambda: sum(r.arrived for r in slow) >= LANES,
            lambda: f"{LANES} requests held, {sum(r.arrived for r in slow)} arrived",
        )
        fast_ids = await act(session, fast_account, 3)
        await until(
            lambda: len(fast.accepted) == 3,
            lambda: f"the fast tenant's 3 events while the slow ones wait; {len(fast.accepted)}",
        )
        assert not release.is_set()  # every slow receiver still holds its requests
        assert [r.body["id"] for r in fast.accepted] == fast_ids
        # Which are slow is kept in the database, for every worker.
        states = (
            await session.execute(
                select(WebhookDeliveryState.subscription_id, WebhookDeliveryState.slow)
            )
        ).all()
        await session.rollback()
        known = {sid: was_slow for sid, was_slow in states}
        assert known[fast_sid] is False
        assert any(known.get(sid) for sid in slow_sids)
        assert dispatcher.delivery.slow_lanes.busy <= LANES // 2

        # Let go: the slow tenants get all of theirs too, nothing lost.
        release.set()
        await until(lambda: _none_pending(session), "every slow tenant's events")
        received = {r.body.get("id") for receiver in slow for r in receiver.accepted}
        assert received >= set(slow_ids)
    finally:
        release.set()
        stop.set()
        if task is not None:
            await task
        for receiver in (*slow, fast):
            await receiver.stop()


async def _none_pending(session: AsyncSession) -> bool:
    return await pending(session) == 0


async def test_an_outbound_timeout_longer_than_a_batch_may_take_still_delivers(
    app: FastAPI, session: AsyncSession
) -> None:
    # A batch must end within half the lease (5 s here); each request may take the
    # outbound timeout (10 s). The first request is still made, within the 5 s.
    box = app_state(app).secret_box
    outbound = dataclasses.replace(app_state(app).outbound, timeout=10.0)
    dispatcher = Dispatcher(app_state(app).engine, box, lease_seconds=10, outbound=outbound)
    receiver = Receiver()
    await receiver.start()
    try:
        account = await make_client(session)
        await session.commit()
        await make_webhook(session, box, account, receiver.url)
        ids = await act(session, account, 2)
        for _ in range(3):
            assert await dispatcher.deliver_once() is True
            if not await pending(session):
                break
        assert [r.body["id"] for r in receiver.accepted] == ids
    finally:
        await dispatcher.webhooks.close()
        await receiver.stop()
