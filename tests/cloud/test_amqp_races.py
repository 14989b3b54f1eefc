"""Concurrent changes of one AMQP subscription (issue 13): of two unsubscribes exactly
one wins (one `delete` event), the other is 404; an update queued behind the
unsubscribe is 404, never a 500. See tests/races.py for how the requests overlap."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import AmqpSubscription
from cloudadmin.web.app_state import app_state
from tests.cloud.helpers import CloudLandscape, cloud_landscape, events
from tests.events.helpers import make_subscription
from tests.factories import auth
from tests.races import in_order

BASE = "/cloud/v1/user_actions"
CONN = "amqps://events:s3cret@broker.example:5671/prod"


@pytest.fixture
async def cl(session: AsyncSession) -> CloudLandscape:
    return await cloud_landscape(session)


@pytest.fixture
async def other_client(app: object) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, client=("203.0.113.8", 40001))  # type: ignore[arg-type]
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


async def deletes(session: AsyncSession) -> int:
    return sum(
        1 for e in await events(session, "amqp_subscription") if e["action_type"] == "delete"
    )


class TestUnsubscribeRacingUnsubscribe:
    async def test_one_wins_the_other_is_404(
        self,
        app: object,
        client: httpx.AsyncClient,
        other_client: httpx.AsyncClient,
        session: AsyncSession,
        cl: CloudLandscape,
    ):
        sid = (
            await make_subscription(
                session,
                app_state(app).secret_box,
                cl.ls.client_account,
                CONN,
                exchange="events",
                routing_key="user.actions",
            )
        ).id
        first, second = await in_order(
            app,
            session,
            AmqpSubscription,
            sid,
            client.post(f"{BASE}/unsubscribe_amqp", headers=auth(cl.ls.client_admin)),
            other_client.post(f"{BASE}/unsubscribe_amqp", headers=auth(cl.ls.client_admin)),
        )
        assert sorted([first.status_code, second.status_code]) == [204, 404]
        assert await deletes(session) == 1


class TestUpdateRacingUnsubscribe:
    async def test_update_after_the_unsubscribe_is_404(
        self,
        app: object,
        client: httpx.AsyncClient,
        other_client: httpx.AsyncClient,
        session: AsyncSession,
        cl: CloudLandscape,
        dialect: str,
    ):
        sid = (
            await make_subscription(
                session,
                app_state(app).secret_box,
                cl.ls.client_account,
                CONN,
                exchange="events",
                routing_key="user.actions",
            )
        ).id
        gone, update = await in_order(
            app,
            session,
            AmqpSubscription,
            sid,
            client.post(f"{BASE}/unsubscribe_amqp", headers=auth(cl.ls.client_admin)),
            other_client.patch(
                f"{BASE}/amqp_subscriptions/{sid}",
                headers=auth(cl.ls.client_admin),
                json={"exchange": "other"},
            ),
        )
        assert gone.status_code == 204
        # PostgreSQL hands the row over in arrival order; SQLite picks an order.
        assert update.status_code in ({404} if dialect == "postgresql" else {200, 404})
        assert await deletes(session) == 1
