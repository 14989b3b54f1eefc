"""User actions reach the subscriber's webhook: a real HTTP receiver on loopback (the
settings fixture allows 127.0.0.0/8), driven through the dispatcher's own passes."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Actor, Caller
from cloudadmin.config import Settings
from cloudadmin.db.models import (
    Client,
    WebhookDelivery,
    WebhookDeliveryState,
    WebhookSubscription,
)
from cloudadmin.db.types import utcnow
from cloudadmin.events import user_actions
from cloudadmin.events.dispatcher import Dispatcher
from cloudadmin.events.user_actions import Resource
from cloudadmin.events.webhooks import COULD_NOT_CONNECT, REDIRECTED, TLS_FAILED
from cloudadmin.kit.crypto import SecretBox
from cloudadmin.kit.outbound import Outbound
from cloudadmin.web.app_state import app_state
from tests.events.conftest import Inbox
from tests.events.helpers import dispatch_all, make_subscription
from tests.events.receiver import Receiver, self_signed
from tests.events.test_status import status_output
from tests.factories import Landscape, auth, next_id
from tests.waiting import until

SECRET = "Bearer wh-s3cret-header-value"
NOT_ALLOWED = "Connections to this address are not allowed: "
LOG = "/cloud/v1/user_actions"


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    r = Receiver()
    await r.start()
    yield r
    await r.stop()


@pytest.fixture
async def webhook_dispatcher(app: FastAPI) -> AsyncIterator[Dispatcher]:
    d = Dispatcher(
        app_state(app).engine,
        app_state(app).secret_box,
        lanes=2,
        poll_seconds=0.05,
        outbound=app_state(app).outbound,
    )
    yield d
    await d.webhooks.close()
    await d.brokers.close()


async def make_webhook(
    session: AsyncSession,
    box: SecretBox,
    client: Client,
    url: str,
    header: str = "Authorization",
    value: str = SECRET,
) -> int:
    sid = next_id()
    session.add(
        WebhookSubscription(
            id=sid,
            client_id=client.id,
            url=url,
            auth_header_name=header,
            auth_header_value_encrypted=box.encrypt(value),
        )
    )
    await session.commit()
    return sid


async def act(session: AsyncSession, account: Client, count: int = 1) -> list[str]:
    """``count`` user actions of ``account``, committed one by one; their event ids."""
    caller = Caller(
        user_id=1,
        user_email="u@example.com",
        superuser=False,
        group_ids=frozenset({1}),
        key_id=1,
        account_id=account.id,
        account_type="common",
        account_reseller_id=account.reseller_id,
    )
    ids = []
    for i in range(count):
        event = await user_actions.record(
            session,
            Actor(caller, "198.51.100.1", "t", f"req-{i}"),
            action_type="update",
            api_group="client",
            resources=[Resource("client", account.id)],
            client_id=account.id,
            reseller_id=account.reseller_id,
            action_data={"n": i},
        )
        ids.append(event.event_id)
        await session.commit()
    return ids


async def state_of(session: AsyncSession, sid: int) -> WebhookDeliveryState:
    state = (
        await session.execute(
            select(WebhookDeliveryState)
            .where(WebhookDeliveryState.subscription_id == sid)
            .execution_options(populate_existing=True)
        )
    ).scalar_one()
    session.expunge(state)  # read as it is now
    await session.rollback()  # end the read (on SQLite it holds the database lock)
    return state


async def pending(session: AsyncSession) -> int:
    rows = (
        (await session.execute(select(WebhookDelivery).where(WebhookDelivery.delivered.is_(False))))
        .scalars()
        .all()
    )
    await session.rollback()
    return len(rows)


async def _none_pending(session: AsyncSession) -> bool:
    return await pending(session) == 0


async def due_now(session: AsyncSession, sid: int) -> None:
    """The backoff has passed (instead of waiting for it)."""
    await session.execute(
        update(WebhookDeliveryState)
        .where(WebhookDeliveryState.subscription_id == sid)
        .values(next_attempt_at=utcnow() - timedelta(seconds=1))
    )
    await session.commit()


class TestDelivery:
    async def test_arrives_with_the_auth_header_and_the_record(
        self,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        receiver: Receiver,
        webhook_dispatcher: Dispatcher,
    ):
        await make_webhook(
            session,
            app_state(app).secret_box,
            ls.client_account,
            receiver.url,
            header="X-Hook-Auth",
        )
        [event_id] = await act(session, ls.client_account)
        await dispatch_all(webhook_dispatcher)
        await until(lambda: len(receiver.received) == 1, "one delivery")
        [got] = receiver.received
        assert got.method == "POST" and got.path == "/hooks/user-actions"
        assert got.headers["x-hook-auth"] == SECRET
        assert got.headers["content-type"] == "application/json"
        assert got.headers["host"] == f"127.0.0.1:{receiver.port}"
        assert got.headers["x-message-id"] == event_id
        assert got.body["id"] == event_id and got.body["action_data"] == {"n": 0}
        assert await pending(session) == 0

    async def test_the_body_is_the_logged_record_which_is_then_acknowledged(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        receiver: Receiver,
        webhook_dispatcher: Dispatcher,
    ):
        # Owed to a webhook only: its delivery alone acknowledges the event.
        await make_webhook(session, app_state(app).secret_box, ls.client_account, receiver.url)
        [event_id] = await act(session, ls.client_account)
        [before] = (await client.get(LOG, headers=auth(ls.client_admin))).json()["results"]
        assert before["acknowledged"] is False
        await dispatch_all(webhook_dispatcher)
        await until(lambda: len(receiver.received) == 1, "one delivery")
        [record] = (await client.get(LOG, headers=auth(ls.client_admin))).json()["results"]
        assert record["acknowledged"] is True
        assert receiver.received[0].body == record and record["id"] == event_id

    async def test_acknowledged_only_once_every_transport_has_it(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        receiver: Receiver,
        webhook_dispatcher: Dispatcher,
    ):
        # The AMQP subscription's broker is down: the webhook's delivery is not enough.
        await make_subscription(
            session,
            app_state(app).secret_box,
            ls.client_account,
            "amqp://guest:guest@127.0.0.1:1/%2F",
            exchange=None,
            routing_key=None,
        )
        await make_webhook(session, app_state(app).secret_box, ls.client_account, receiver.url)
        await act(session, ls.client_account)
        await dispatch_all(webhook_dispatcher)
        await until(lambda: len(receiver.received) == 1, "one delivery")
        [record] = (await client.get(LOG, headers=auth(ls.client_admin))).json()["results"]
        assert record["acknowledged"] is False

    async def test_the_same_body_as_the_amqp_message(
        self,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        receiver: Receiver,
        inbox: Inbox,
        rabbit_url: str,
        webhook_dispatcher: Dispatcher,
    ):
        # One record, two transports: both subscribers get the same shape.
        await make_subscription(
            session,
            app_state(app).secret_box,
            ls.client_account,
            rabbit_url,
            exchange=inbox.exchange,
            routing_key=inbox.routing_key,
        )
        await make_webhook(session, app_state(app).secret_box, ls.client_account, receiver.url)
        await act(session, ls.client_account)
        await dispatch_all(webhook_dispatcher)
        [message] = await inbox.drain(1)
        await until(lambda: len(receiver.received) == 1, "one delivery")
        assert receiver.received[0].body == json.loads(message.body)

    async def test_in_order_per_subscription(
        self,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        receiver: Receiver,
        webhook_dispatcher: Dispatcher,
    ):
        other = Receiver()
        await other.start()
        try:
            await make_webhook(session, app_state(app).secret_box, ls.client_account, receiver.url)
            await make_webhook(session, app_state(app).secret_box, ls.reseller_account, other.url)
            mine = await act(session, ls.client_account, 25)
            theirs = await act(session, ls.reseller_account, 5)
            stop = asyncio.Event()
            task = asyncio.create_task(webhook_dispatcher.run(stop))
            try:
                await until(
                    lambda: len(receiver.accepted) == 25 and len(other.accepted) == 5,
                    lambda: (
                        "25 and 5 events at their receivers, got "
                        f"{len(receiver.accepted)} and {len(other.accepted)}"
                    ),
                )
            finally:
                stop.set()
                await task
            assert [r.body["id"] for r in receiver.received] == mine
            assert [r.body["id"] for r in other.received] == theirs
        finally:
            await other.stop()

    async def test_only_the_accounts_own_actions(
        self,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        receiver: Receiver,
        webhook_dispatcher: Dispatcher,
    ):
        # A reseller's webhook gets its own actions, not its clients' (webhooks have no
        # receive_child_client_events).
        await make_webhook(session, app_state(app).secret_box, ls.reseller_account, receiver.url)
        await act(session, ls.client_account)
        [own] = await act(session, ls.reseller_account)
        await dispatch_all(webhook_dispatcher)
        await until(lambda: len(receiver.received) >= 1, "a delivery")
        assert [r.body["id"] for r in receiver.received] == [own]


class TestRetries:
    async def test_a_500_is_retried_with_backoff_and_nothing_is_lost(
        self,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        receiver: Receiver,
        webhook_dispatcher: Dispatcher,
    ):
        sid = await make_webhook(
            session, app_state(app).secret_box, ls.client_account, receiver.url
        )
        ids = await act(session, ls.client_account, 3)
        receiver.answers = [200, 500]  # the first accepted, the second refused

        assert await webhook_dispatcher.deliver_once() is True
        state = await state_of(session, sid)
        assert state.attempts == 1 and state.next_attempt_at is not None
        assert state.next_attempt_at > utcnow()
        assert state.last_error == "The receiver answered HTTP 500."
        assert await pending(session) == 2
        assert await webhook_dispatcher.deliver_once() is False  # backing off: nothing due

        receiver.answers = [503]
        await due_now(session, sid)
        assert await webhook_dispatcher.deliver_once() is True
        state = await state_of(session, sid)
        assert state.attempts == 2  # the backoff grows: 1 s, then 2 s (with jitter)
        assert state.next_attempt_at is not None
        assert state.next_attempt_at > utcnow() + timedelta(seconds=1)

        await due_now(session, sid)
        await dispatch_all(webhook_dispatcher)
        assert [r.body["id"] for r in receiver.accepted] == ids  # each once, in order
        assert [r.body["id"] for r in receiver.received] == [ids[0], ids[1], ids[1], ids[1], ids[2]]
        state = await state_of(session, sid)
        assert (state.attempts, state.next_attempt_at, state.last_error) == (0, None, None)
        assert await pending(session) == 0

    async def test_a_receiver_that_is_down_gets_everything_when_back(
        self,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        webhook_dispatcher: Dispatcher,
    ):
        down = Receiver()  # a port nobody listens on, yet
        sid = await make_webhook(session, app_state(app).secret_box, ls.client_account, down.url)
        ids = await act(session, ls.client_account, 4)
        assert await webhook_dispatcher.deliver_once() is True
        state = await state_of(session, sid)
        assert state.attempts == 1 and state.last_error == COULD_NOT_CONNECT
        assert await pending(session) == 4

        await down.start()
        try:
            await due_now(session, sid)
            stop = asyncio.Event()
            task = asyncio.create_task(webhook_dispatcher.run(stop))
            try:
                await until(lambda: len(down.accepted) == 4, "the held events")
                await until(lambda: _none_pending(session), "the deliveries marked")
            finally:
                stop.set()
                await task
            assert [r.body["id"] for r in down.accepted] == ids
        finally:
            await down.stop()

    async def test_redirects_are_not_followed(
        self,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        receiver: Receiver,
        webhook_dispatcher: Dispatcher,
    ):
        elsewhere = Receiver()
        await elsewhere.start()
        try:
            receiver.answers, receiver.location = [307], elsewhere.url
            sid = await make_webhook(
                session, app_state(app).secret_box, ls.client_account, receiver.url
            )
            await act(session, ls.client_account)
            assert await webhook_dispatcher.deliver_once() is True
            assert (await state_of(session, sid)).last_error == REDIRECTED
            assert elsewhere.received == []
            assert await pending(session) == 1
        finally:
            await elsewhere.stop()

    async def test_the_secret_header_is_never_logged(
        self,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        receiver: Receiver,
        webhook_dispatcher: Dispatcher,
        caplog: pytest.LogCaptureFixture,
    ):
        caplog.set_level(logging.DEBUG)
        sid = await make_webhook(
            session, app_state(app).secret_box, ls.client_account, receiver.url
        )
        await act(session, ls.client_account, 2)
        receiver.answers = [500]
        await webhook_dispatcher.deliver_once()
        await due_now(session, sid)
        await dispatch_all(webhook_dispatcher)
        assert len(receiver.accepted) == 2
        assert caplog.records  # the failure was logged...
        assert all("wh-s3cret" not in r.getMessage() for r in caplog.records)  # ...not it
        stored = (
            await session.execute(select(WebhookSubscription.auth_header_value_encrypted))
        ).scalar_one()
        await session.rollback()
        assert "wh-s3cret" not in stored


class TestTls:
    async def test_an_untrusted_certificate_is_refused(
        self,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        webhook_dispatcher: Dispatcher,
        tmp_path: Path,
    ):
        receiver = Receiver(tls=self_signed(tmp_path))
        await receiver.start()
        try:
            sid = await make_webhook(
                session, app_state(app).secret_box, ls.client_account, receiver.url
            )
            await act(session, ls.client_account)
            assert await webhook_dispatcher.deliver_once() is True
            assert (await state_of(session, sid)).last_error == TLS_FAILED
            assert receiver.received == []
            assert await pending(session) == 1
        finally:
            await receiver.stop()


class TestOutbound:
    async def test_a_refused_address_is_never_connected(
        self,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        receiver: Receiver,
    ):
        # Saved before loopback was refused (or written around the API): the dispatcher
        # checks again when it connects.
        dispatcher = Dispatcher(
            app_state(app).engine, app_state(app).secret_box, outbound=Outbound()
        )
        try:
            sid = await make_webhook(
                session, app_state(app).secret_box, ls.client_account, receiver.url
            )
            await act(session, ls.client_account)
            assert await dispatcher.deliver_once() is True
            state = await state_of(session, sid)
            assert state.last_error == f"{NOT_ALLOWED}127.0.0.1 is a loopback address."
            assert receiver.received == []
        finally:
            await dispatcher.webhooks.close()

    @pytest.mark.parametrize("allowed", [False, True])
    async def test_the_checked_address_is_the_one_connected(
        self,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        receiver: Receiver,
        monkeypatch: pytest.MonkeyPatch,
        allowed: bool,
    ):
        # A name that resolves inward (DNS rebinding): the address connected to is the
        # one checked; the request still names the host (Host header).
        loop = asyncio.get_running_loop()
        real = loop.getaddrinfo

        async def rebinding(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
            return await real(
                "127.0.0.1" if host == "hook.example" else host, port, *args, **kwargs
            )

        monkeypatch.setattr(loop, "getaddrinfo", rebinding)
        outbound = app_state(app).outbound if allowed else Outbound()
        dispatcher = Dispatcher(app_state(app).engine, app_state(app).secret_box, outbound=outbound)
        try:
            sid = await make_webhook(
                session,
                app_state(app).secret_box,
                ls.client_account,
                f"http://hook.example:{receiver.port}/in",
            )
            await act(session, ls.client_account)
            await dispatch_all(dispatcher)
            if allowed:
                await until(lambda: len(receiver.received) == 1, "the delivery")
                assert receiver.received[0].headers["host"] == f"hook.example:{receiver.port}"
                assert await pending(session) == 0
            else:
                assert (await state_of(session, sid)).last_error == (
                    f"{NOT_ALLOWED}hook.example resolves to 127.0.0.1, a loopback address."
                )
                assert receiver.received == []
        finally:
            await dispatcher.webhooks.close()


class TestOutbox:
    async def test_unsubscribing_drops_what_was_owed(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        receiver: Receiver,
        webhook_dispatcher: Dispatcher,
    ):
        receiver.answers = [500]
        sid = await make_webhook(
            session, app_state(app).secret_box, ls.client_account, receiver.url
        )
        await act(session, ls.client_account, 2)
        await webhook_dispatcher.deliver_once()
        assert (await state_of(session, sid)).attempts == 1
        r = await client.post("/cloud/v1/user_actions/unsubscribe", headers=auth(ls.client_admin))
        assert r.status_code == 204
        assert await pending(session) == 0
        assert await webhook_dispatcher.deliver_once() is False

    async def test_an_event_still_owed_to_a_webhook_is_not_purged(
        self,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        webhook_dispatcher: Dispatcher,
    ):
        down = Receiver()
        await make_webhook(session, app_state(app).secret_box, ls.client_account, down.url)
        await act(session, ls.client_account)
        await webhook_dispatcher.purge_delivered(
            older_than=timedelta(0), log_older_than=timedelta(0)
        )
        assert await pending(session) == 1


class TestStatus:
    async def test_events_status_lists_webhooks_without_the_secret(
        self,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        receiver: Receiver,
        webhook_dispatcher: Dispatcher,
        settings: Settings,
        tmp_path: Path,
    ):
        good = await make_webhook(
            session, app_state(app).secret_box, ls.client_account, receiver.url
        )
        bad = await make_webhook(
            session, app_state(app).secret_box, ls.reseller_account, Receiver().url
        )
        await act(session, ls.client_account, 2)
        await act(session, ls.reseller_account)
        await dispatch_all(webhook_dispatcher)
        out = status_output(settings, tmp_path)
        lines = {
            int(line.split()[1]): line.split()
            for line in out.splitlines()
            if line.startswith("webhook ")
        }
        assert lines[good][2:6] == [str(ls.client_account.id), "0", "2", "ok"]
        assert lines[bad][2:6] == [str(ls.reseller_account.id), "1", "0", "failing"]
        assert COULD_NOT_CONNECT in " ".join(lines[bad])
        assert "wh-s3cret" not in out
