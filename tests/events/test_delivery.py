"""User-action events reach the subscriber's broker (issue: events and notifications)."""

from __future__ import annotations

import json
from datetime import timedelta

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.auth.caller import Actor, Caller
from cloudadmin.db.models import AmqpSubscription, DeliveryState, EventDelivery
from cloudadmin.db.types import utcnow
from cloudadmin.events import user_actions
from cloudadmin.events.dispatcher import Dispatcher
from cloudadmin.events.user_actions import Resource
from cloudadmin.web.app_state import app_state
from tests.events.conftest import Inbox
from tests.events.helpers import dispatch_all, make_subscription
from tests.factories import Landscape, auth

SELLERS = "/iam/admin/sellers"
# The real API's user-action record, and this service's request_id (docs/events.md).
DOCUMENTED_KEYS = {
    "id",
    "action_type",
    "api_group",
    "resources",
    "client_id",
    "user_id",
    "email",
    "token_id",
    "project_id",
    "region_id",
    "source_user_ip",
    "user_agent",
    "timestamp",
    "action_data",
    "request_id",
    "acknowledged",
    "is_complete",
    "issued_by_user_id",
    "task_id",
    "total_price",
}


def bodies(messages: list) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(m.body) for m in messages]


class TestDelivery:
    async def test_event_arrives_with_documented_body_exchange_and_key(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        inbox: Inbox,
        rabbit_url: str,
        dispatcher: Dispatcher,
    ):
        await make_subscription(
            session,
            app_state(app).secret_box,
            ls.reseller_account,
            rabbit_url,
            exchange=inbox.exchange,
            routing_key=inbox.routing_key,
        )
        r = await client.post(
            SELLERS,
            json={"email": "e@sales.example", "full_name": "E"},
            headers={**auth(ls.reseller), "User-Agent": "ua/1", "X-Request-ID": "req-42"},
        )
        assert r.status_code == 200
        await dispatch_all(dispatcher)
        [message] = await inbox.drain(1)
        assert message.routing_key == inbox.routing_key and message.exchange == inbox.exchange
        assert message.delivery_mode == 2 and message.content_type == "application/json"
        body = json.loads(message.body)
        assert set(body) == DOCUMENTED_KEYS
        assert message.message_id == body["id"]
        assert body["action_type"] == "create" and body["api_group"] == "seller"
        assert body["resources"] == [
            {"resource_id": str(r.json()["id"]), "resource_type": "seller"}
        ]
        assert body["client_id"] == ls.reseller_account.id
        assert body["source_user_ip"] == "203.0.113.7" and body["user_agent"] == "ua/1"
        assert body["request_id"] == "req-42" and body["timestamp"].endswith("Z")
        assert body["action_data"] == {"email": "e@sales.example", "full_name": "E", "phone": None}

    async def test_default_exchange_when_none(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        inbox: Inbox,
        rabbit_url: str,
        dispatcher: Dispatcher,
    ):
        # The default exchange routes by queue name.
        await make_subscription(
            session,
            app_state(app).secret_box,
            ls.reseller_account,
            rabbit_url,
            exchange=None,
            routing_key=inbox.queue.name,
        )
        await client.post(
            SELLERS, json={"email": "d@sales.example", "full_name": "D"}, headers=auth(ls.reseller)
        )
        await dispatch_all(dispatcher)
        assert len(await inbox.drain(1)) == 1

    async def test_rolled_back_request_never_arrives(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        inbox: Inbox,
        rabbit_url: str,
        dispatcher: Dispatcher,
    ):
        await make_subscription(
            session,
            app_state(app).secret_box,
            ls.reseller_account,
            rabbit_url,
            exchange=inbox.exchange,
            routing_key=inbox.routing_key,
        )
        body = {"email": "twice@sales.example", "full_name": "T"}
        assert (await client.post(SELLERS, json=body, headers=auth(ls.reseller))).status_code == 200
        assert (await client.post(SELLERS, json=body, headers=auth(ls.reseller))).status_code == 409
        await dispatch_all(dispatcher)
        await inbox.drain(1)
        assert len(await inbox.flushed()) == 1

    async def test_order_is_kept(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        inbox: Inbox,
        rabbit_url: str,
        dispatcher: Dispatcher,
    ):
        await make_subscription(
            session,
            app_state(app).secret_box,
            ls.reseller_account,
            rabbit_url,
            exchange=inbox.exchange,
            routing_key=inbox.routing_key,
        )
        for i in range(30):
            await client.post(
                SELLERS,
                json={"email": f"o{i}@sales.example", "full_name": "O"},
                headers=auth(ls.reseller),
            )
        await dispatch_all(dispatcher)
        got = bodies(await inbox.drain(30))
        assert [b["action_data"]["email"] for b in got] == [
            f"o{i}@sales.example" for i in range(30)
        ]


async def _child_event(session: AsyncSession, ls: Landscape) -> None:
    caller = Caller(
        user_id=1,
        user_email="u@example.com",
        superuser=False,
        group_ids=frozenset({1}),
        key_id=1,
        account_id=ls.client_account.id,
        account_type="common",
        account_reseller_id=ls.reseller_account.id,
    )
    await user_actions.record(
        session,
        Actor(caller, "198.51.100.1", "t", "r"),
        action_type="update",
        api_group="client",
        resources=[Resource("client", ls.client_account.id)],
        client_id=ls.client_account.id,
        reseller_id=ls.reseller_account.id,
        action_data={"name": "x"},
    )
    await session.commit()


class TestChildClientEvents:
    @pytest.mark.parametrize("child_events", [True, False])
    async def test_reseller_receives_child_events_only_when_asked(
        self,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        inbox: Inbox,
        rabbit_url: str,
        dispatcher: Dispatcher,
        child_events: bool,
    ):
        await make_subscription(
            session,
            app_state(app).secret_box,
            ls.reseller_account,
            rabbit_url,
            exchange=inbox.exchange,
            routing_key=inbox.routing_key,
            child_events=child_events,
        )
        await _child_event(session, ls)
        await dispatch_all(dispatcher)
        got = await inbox.drain(1) if child_events else await inbox.flushed()
        assert len(got) == (1 if child_events else 0)
        if child_events:
            assert json.loads(got[0].body)["client_id"] == ls.client_account.id

    async def test_child_account_own_subscription_also_receives(
        self,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        inbox: Inbox,
        rabbit_url: str,
        dispatcher: Dispatcher,
    ):
        await make_subscription(
            session,
            app_state(app).secret_box,
            ls.reseller_account,
            rabbit_url,
            exchange=inbox.exchange,
            routing_key=inbox.routing_key,
            child_events=True,
        )
        await make_subscription(
            session,
            app_state(app).secret_box,
            ls.client_account,
            rabbit_url,
            exchange=inbox.exchange,
            routing_key=inbox.routing_key,
        )
        await _child_event(session, ls)
        await dispatch_all(dispatcher)
        got = await inbox.drain(2)
        assert len(got) == 2
        assert len({m.message_id for m in got}) == 1  # the same event, once per subscription


class TestBrokerOutage:
    async def test_events_are_held_then_delivered(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        inbox: Inbox,
        rabbit_url: str,
        dispatcher: Dispatcher,
    ):
        closed = "amqp://guest:hidden-pw@127.0.0.1:1/%2F"
        sub = await make_subscription(
            session,
            app_state(app).secret_box,
            ls.reseller_account,
            closed,
            exchange=inbox.exchange,
            routing_key=inbox.routing_key,
        )
        sub_id = sub.id
        for i in range(3):
            await client.post(
                SELLERS,
                json={"email": f"h{i}@sales.example", "full_name": "H"},
                headers=auth(ls.reseller),
            )
        assert await dispatcher.deliver_once() is True
        state = (
            await session.execute(
                select(DeliveryState)
                .where(DeliveryState.subscription_id == sub_id)
                .execution_options(populate_existing=True)
            )
        ).scalar_one()
        assert state.attempts == 1 and state.next_attempt_at > utcnow()
        assert "hidden-pw" not in (state.last_error or "") and "127.0.0.1:1" in state.last_error
        await session.rollback()
        assert await dispatcher.deliver_once() is False  # backing off: nothing due
        pending = (
            (await session.execute(select(EventDelivery).where(EventDelivery.delivered.is_(False))))
            .scalars()
            .all()
        )
        assert len(pending) == 3
        await session.rollback()  # end the read (on SQLite it holds the write lock)

        # The subscriber fixes its broker address; the held events then arrive in order.
        await session.execute(
            update(AmqpSubscription)
            .where(AmqpSubscription.id == sub_id)
            .values(connection_string_encrypted=app_state(app).secret_box.encrypt(rabbit_url))
        )
        await session.execute(
            update(DeliveryState).values(next_attempt_at=utcnow() - timedelta(seconds=1))
        )
        await session.commit()
        await dispatch_all(dispatcher)
        got = bodies(await inbox.drain(3))
        assert [b["action_data"]["email"] for b in got] == [f"h{i}@sales.example" for i in range(3)]

    async def test_a_dead_subscriber_does_not_hold_up_others(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        inbox: Inbox,
        rabbit_url: str,
        dispatcher: Dispatcher,
    ):
        await make_subscription(
            session,
            app_state(app).secret_box,
            ls.client_account,
            "amqp://guest:guest@127.0.0.1:1/%2F",
            exchange="x",
            routing_key="y",
        )
        await make_subscription(
            session,
            app_state(app).secret_box,
            ls.reseller_account,
            rabbit_url,
            exchange=inbox.exchange,
            routing_key=inbox.routing_key,
        )
        await _child_event(session, ls)  # owed to the dead subscriber
        await client.post(
            SELLERS,
            json={"email": "live@sales.example", "full_name": "L"},
            headers=auth(ls.reseller),
        )
        await dispatch_all(dispatcher)
        assert len(await inbox.drain(1)) == 1
