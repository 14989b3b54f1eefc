"""A success resets the backoff: a receiver that refuses one request in twenty gets
every change, in order, and is never made to wait more than the first step of the
backoff (a real HTTP receiver on loopback, the dispatcher's own passes)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.types import utcnow
from cloudadmin.events.dispatcher import Dispatcher
from cloudadmin.web.app_state import app_state
from tests.events.receiver import Receiver
from tests.events.test_webhooks import act, due_now, make_webhook, pending, state_of
from tests.factories import Landscape

CHANGES = 201
FAIL_EVERY = 20  # the receiver answers 500 to every 20th request: 5 %
FIRST_STEP = 1.2  # the backoff's first step, 1 s, with its +20 % jitter


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    r = Receiver(answers=([200] * (FAIL_EVERY - 1) + [500]) * (CHANGES // FAIL_EVERY + 1))
    await r.start()
    yield r
    await r.stop()


async def test_a_mostly_healthy_receiver_gets_every_change_without_long_waits(
    app: FastAPI,
    session: AsyncSession,
    ls: Landscape,
    receiver: Receiver,
    dispatcher: Dispatcher,
) -> None:
    sid = await make_webhook(session, app_state(app).secret_box, ls.client_account, receiver.url)
    ids = await act(session, ls.client_account, CHANGES)
    waits: list[float] = []  # each backoff the dispatcher scheduled, in seconds
    passes = 0
    # Each pass ends at a refusal (or delivers the rest): about one pass per 19 changes.
    while await pending(session) and passes < 2 * CHANGES // FAIL_EVERY:
        assert await dispatcher.deliver_once() is True
        passes += 1
        state = await state_of(session, sid)
        if state.next_attempt_at is None:
            continue
        waits.append((state.next_attempt_at - utcnow()).total_seconds())
        # Every refusal came after accepted requests: each is a first failure again.
        assert state.attempts == 1, f"attempt {state.attempts} after {len(waits)} refusals"
        await due_now(session, sid)  # the wait it scheduled is measured, not waited
    assert await pending(session) == 0, f"{await pending(session)} changes left"
    assert [r.body["id"] for r in receiver.accepted] == ids  # each once, in order
    refusals = len(receiver.received) - len(receiver.accepted)
    assert len(waits) == refusals == CHANGES // FAIL_EVERY
    assert max(waits) <= FIRST_STEP
    # Before: attempts 1 to 10, waits doubling from 1 s to 512 s (1023 s in all).
    assert sum(waits) <= refusals * FIRST_STEP
    state = await state_of(session, sid)
    assert (state.attempts, state.next_attempt_at, state.last_error) == (0, None, None)
