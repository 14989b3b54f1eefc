"""A subscriber and a reader of the log see one record (real RabbitMQ)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import (
    AmqpSubscription,
    DeliveryState,
    EventDelivery,
    UserActionEvent,
    UserActionResource,
)
from cloudadmin.db.types import utcnow
from cloudadmin.events.dispatcher import Dispatcher
from cloudadmin.web.app_state import app_state
from tests.cloud.helpers import make_listener, make_project, make_region
from tests.events.conftest import Inbox
from tests.events.helpers import dispatch_all, make_subscription
from tests.factories import Landscape, auth
from tests.waiting import until

LOG = "/cloud/v1/user_actions"
# Nothing listens on port 1 of the loopback: connections are refused at once.
DEAD_BROKER = "amqp://guest:guest@127.0.0.1:1/%2F"


async def rename_a_listener(client: httpx.AsyncClient, session: AsyncSession, ls: Landscape) -> str:
    region = await make_region(session)
    project = await make_project(session, ls.client_account.id)
    await session.commit()
    lid = await make_listener(session, project, region)
    r = await client.patch(
        f"/cloud/v1/lblisteners/{project}/{region}/{lid}",
        json={"name": "renamed"},
        headers=auth(ls.client_admin),
    )
    assert r.status_code == 200, r.text
    return lid


async def logged(client: httpx.AsyncClient, token: str) -> list[dict[str, Any]]:
    r = await client.get(LOG, headers=auth(token))
    assert r.status_code == 200, r.text
    return r.json()["results"]  # type: ignore[no-any-return]


async def wait_acknowledged(
    client: httpx.AsyncClient, token: str, timeout: float = 10.0
) -> dict[str, Any]:
    """The one logged record, once it is acknowledged; fails when it never is."""
    seen: list[dict[str, Any]] = []

    async def acknowledged() -> bool:
        seen[:] = await logged(client, token)
        return len(seen) == 1 and seen[0]["acknowledged"] is True

    await until(acknowledged, lambda: f"the delivery to be acknowledged, log: {seen}", timeout)
    return seen[0]


class TestOneShape:
    async def test_the_consumed_message_equals_the_logged_record(
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
            rabbit_url,
            exchange=inbox.exchange,
            routing_key=inbox.routing_key,
        )
        lid = await rename_a_listener(client, session, ls)
        await dispatch_all(dispatcher)
        [message] = await inbox.drain(1)
        body = json.loads(message.body)
        record = await wait_acknowledged(client, ls.client_admin)
        assert record["acknowledged"] is True, "the delivery was never acknowledged"
        assert body == record
        assert message.message_id == record["id"]
        assert record["resources"][0]["resource_id"] == lid

    async def test_before_delivery_the_record_is_not_acknowledged(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        rabbit_url: str,
        inbox: Inbox,
    ):
        await make_subscription(
            session,
            app_state(app).secret_box,
            ls.client_account,
            rabbit_url,
            exchange=inbox.exchange,
            routing_key=inbox.routing_key,
        )
        await rename_a_listener(client, session, ls)
        [record] = await logged(client, ls.client_admin)
        assert record["acknowledged"] is False

    async def test_acknowledged_once_every_subscription_has_it(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        inbox: Inbox,
        rabbit_url: str,
        dispatcher: Dispatcher,
    ):
        """The reseller receives its client's events; the client's own broker is down."""
        await make_subscription(
            session,
            app_state(app).secret_box,
            ls.reseller_account,
            rabbit_url,
            exchange=inbox.exchange,
            routing_key=inbox.routing_key,
            child_events=True,
        )
        own = await make_subscription(
            session,
            app_state(app).secret_box,
            ls.client_account,
            DEAD_BROKER,
            exchange=inbox.exchange,
            routing_key=inbox.routing_key,
        )
        await rename_a_listener(client, session, ls)
        await dispatch_all(dispatcher)
        [message] = await inbox.drain(1)
        [record] = await logged(client, ls.client_admin)
        assert record["acknowledged"] is False  # the client's own subscription still waits
        assert {**record, "acknowledged": True} == json.loads(message.body)

        # The client's broker comes back: the record is acknowledged.
        await session.execute(
            update(AmqpSubscription)
            .where(AmqpSubscription.id == own.id)
            .values(connection_string_encrypted=app_state(app).secret_box.encrypt(rabbit_url))
        )
        await session.execute(
            update(DeliveryState)
            .where(DeliveryState.subscription_id == own.id)
            .values(next_attempt_at=None)
        )
        await session.commit()
        await dispatch_all(dispatcher)
        assert len(await inbox.drain(2)) == 2
        record = await wait_acknowledged(client, ls.client_admin)
        assert record["acknowledged"] is True
        assert record == json.loads(inbox.received[1].body)


async def age(session: AsyncSession, days: int) -> None:
    """Makes every event ``days`` old and every delivery done that long ago."""
    then = utcnow() - timedelta(days=days)
    await session.execute(update(UserActionEvent).values(created_at=then, acknowledged=True))
    await session.execute(update(EventDelivery).values(delivered=True, delivered_at=then))
    await session.commit()


async def counts(session: AsyncSession) -> tuple[int, int, int]:
    out = []
    for model in (UserActionEvent, EventDelivery, UserActionResource):
        out.append((await session.execute(select(func.count()).select_from(model))).scalar_one())
    await session.commit()
    return out[0], out[1], out[2]


class TestLogRetention:
    async def test_delivered_events_stay_in_the_log_after_their_deliveries_go(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        rabbit_url: str,
        dispatcher: Dispatcher,
    ):
        await make_subscription(
            session,
            app_state(app).secret_box,
            ls.client_account,
            rabbit_url,
            exchange=None,
            routing_key="unused",
        )
        await rename_a_listener(client, session, ls)
        await age(session, 30)
        await dispatcher.purge_delivered()
        assert await counts(session) == (1, 0, 1)
        [record] = await logged(client, ls.client_admin)
        assert record["acknowledged"] is True

    async def test_events_go_after_a_year(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        dispatcher: Dispatcher,
    ):
        await rename_a_listener(client, session, ls)
        await age(session, 366)
        await dispatcher.purge_delivered()
        assert await counts(session) == (0, 0, 0)
        assert await logged(client, ls.client_admin) == []
