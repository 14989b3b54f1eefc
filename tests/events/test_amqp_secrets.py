"""Secrets of subscriptions and mail servers: a masked password sent back keeps the stored
one, a repaired destination is tried at once, and masking parses URLs (real RabbitMQ at
127.0.0.1:5672 and aiosmtpd on loopback)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import timedelta

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import (
    ActivityLogEntry,
    AmqpSubscription,
    Branding,
    DeliveryState,
    MailMessage,
)
from cloudadmin.db.types import utcnow
from cloudadmin.events.dispatcher import Dispatcher
from cloudadmin.web.app_state import app_state
from tests.events.conftest import Inbox, Mailbox
from tests.events.helpers import dispatch_all, make_subscription
from tests.events.sockets import closed_port
from tests.events.test_mail import configure_mail, send_all, wrong
from tests.factories import Landscape, auth
from tests.waiting import until

BASE = "/cloud/v1/user_actions"
SUBSCRIBE = f"{BASE}/subscribe_amqp"
TEST_URL = f"{BASE}/subscribe_amqp_test"
BRANDING = "/iam/reselling/settings"
LIST = f"{BASE}/amqp_subscriptions_list"
SELLERS = "/iam/admin/sellers"
# What five minutes of failures leave behind: the next attempt far away.
LONG_BACKOFF = timedelta(seconds=300)


def one(sid: int) -> str:
    return f"{BASE}/amqp_subscriptions/{sid}"


def masked(url: str) -> str:
    return url.replace(":guest@", ":***@")


async def stored_url(session: AsyncSession, app: FastAPI, sid: int) -> str:
    row = await session.get(AmqpSubscription, sid, populate_existing=True)
    await session.commit()  # end the read: on SQLite it holds the database lock
    assert row is not None
    return str(app_state(app).secret_box.decrypt(row.connection_string_encrypted))


async def long_outage(session: AsyncSession, sid: int) -> None:
    """The subscription's state after many failed attempts."""
    session.add(
        DeliveryState(
            subscription_id=sid,
            attempts=9,
            last_error="down",
            next_attempt_at=utcnow() + LONG_BACKOFF,
        )
    )
    await session.commit()


@pytest.fixture
async def running(dispatcher: Dispatcher) -> AsyncIterator[Dispatcher]:
    """The dispatcher running on its own, as in `serve`."""
    stop = asyncio.Event()
    task = asyncio.create_task(dispatcher.run(stop))
    yield dispatcher
    stop.set()
    await asyncio.wait_for(task, 30)


class TestMaskedPasswordSentBack:
    async def test_get_then_patch_keeps_the_password_and_delivery_authenticates(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        inbox: Inbox,
        rabbit_url: str,
        dispatcher: Dispatcher,
    ):
        r = await client.post(
            SUBSCRIBE,
            json={
                "connection_string": rabbit_url,
                "exchange": inbox.exchange,
                "routing_key": inbox.routing_key,
            },
            headers=auth(ls.client_admin),
        )
        assert r.status_code == 204, r.text
        [sub] = (await client.get(LIST, headers=auth(ls.client_admin))).json()["results"]
        assert sub["connection_string"] == masked(rabbit_url)
        r = await client.patch(
            one(sub["id"]),
            json={**sub, "routing_key": inbox.routing_key},
            headers=auth(ls.client_admin),
        )
        assert r.status_code == 200, r.text
        assert await stored_url(session, app, sub["id"]) == rabbit_url
        await dispatch_all(dispatcher)
        got = await inbox.drain(1)
        assert [json.loads(m.body)["api_group"] for m in got] == ["amqp_subscription"]

    async def test_masked_string_with_a_repaired_host_keeps_the_password(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        rabbit_url: str,
    ):
        broken = rabbit_url.replace(":5672/", f":{closed_port()}/")
        sub = await make_subscription(
            session,
            app_state(app).secret_box,
            ls.client_account,
            broken,
            exchange=None,
            routing_key=None,
        )
        r = await client.patch(
            one(sub.id),
            json={"connection_string": masked(rabbit_url)},
            headers=auth(ls.client_admin),
        )
        assert r.status_code == 200, r.text
        assert r.json()["connection_string"] == masked(rabbit_url)
        assert await stored_url(session, app, sub.id) == rabbit_url

    @pytest.mark.parametrize("path", [SUBSCRIBE, TEST_URL])
    async def test_a_new_connection_string_may_not_carry_the_mask(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
        rabbit_url: str,
        path: str,
    ):
        r = await client.post(
            path, json={"connection_string": masked(rabbit_url)}, headers=auth(ls.client_admin)
        )
        assert r.status_code == 400, r.text
        [why] = r.json()["invalid_fields"]["connection_string"]
        assert why.startswith("The password is the mask (***)")
        assert (await session.execute(select(AmqpSubscription))).first() is None


class TestRepairRetriesAtOnce:
    async def test_fixing_the_broker_address_delivers_without_waiting_out_the_backoff(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        inbox: Inbox,
        rabbit_url: str,
        running: Dispatcher,
    ):
        broken = rabbit_url.replace(":5672/", f":{closed_port()}/")
        sub = await make_subscription(
            session,
            app_state(app).secret_box,
            ls.reseller_account,
            broken,
            exchange=inbox.exchange,
            routing_key=inbox.routing_key,
        )
        sid = sub.id
        await long_outage(session, sid)
        r = await client.post(
            SELLERS,
            json={"email": "held@sales.example", "full_name": "H"},
            headers=auth(ls.reseller),
        )
        assert r.status_code == 200, r.text

        r = await client.patch(
            one(sid), json={"connection_string": rabbit_url}, headers=auth(ls.reseller)
        )
        assert r.status_code == 200, r.text
        got = await inbox.drain(2, timeout=20)
        assert [json.loads(m.body)["api_group"] for m in got] == ["seller", "amqp_subscription"]
        state = await session.get(DeliveryState, sid, populate_existing=True)
        found = None if state is None else (state.attempts, state.last_error)
        # The read's transaction holds SQLite's write lock (BEGIN IMMEDIATE): end it, or
        # the dispatcher's next write waits out the busy timeout before it can stop.
        await session.rollback()
        assert found == (0, None)

    async def test_fixing_the_mail_server_sends_without_waiting_out_the_backoff(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        smtp_server: tuple[Mailbox, int],
        running: Dispatcher,
    ):
        mailbox, port = smtp_server
        await configure_mail(session, app, ls, closed_port())
        await client.get("/iam/activity_log/requests", headers=wrong(ls.client_admin))
        await session.execute(
            update(MailMessage).values(
                attempts=9, last_error="down", next_attempt_at=utcnow() + LONG_BACKOFF
            )
        )
        await session.commit()

        r = await client.put(
            BRANDING,
            json={
                "domain": "acme.example",
                "publicSettings": {
                    "showApiDoc": True,
                    "showStatusPage": "true",
                    "showKnowledgeBase": True,
                    "showTickets": True,
                    "fromEmail": "noreply@acme.example",
                },
                "privateSettings": {
                    "mailServer": {"tls": False, "host": "127.0.0.1", "port": str(port)}
                },
            },
            headers=auth(ls.reseller),
        )
        assert r.status_code == 200, r.text
        await until(lambda: mailbox.messages, "the held mail to be sent after the repair")
        assert len(mailbox.messages) == 1, mailbox.messages


class TestMaskingParsesTheUrl:
    async def test_a_short_password_does_not_mangle_the_failure(
        self,
        client: httpx.AsyncClient,
        ls: Landscape,
    ):
        # "e" is in every word of the old message; the answer must still read whole.
        port = closed_port()
        r = await client.post(
            TEST_URL,
            json={"connection_string": f"amqp://guest:e@127.0.0.1:{port}/%2F"},
            headers=auth(ls.client_admin),
        )
        assert r.status_code == 400
        assert r.json()["invalid_fields"]["connection_string"] == [
            f"127.0.0.1:{port}: Could not connect to the broker."
        ]

    async def test_a_short_mail_password_does_not_mangle_the_failure(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        dispatcher: Dispatcher,
    ):
        port = closed_port()
        await configure_mail(session, app, ls, port)
        await session.execute(
            update(Branding).values(mail_password_encrypted=app_state(app).secret_box.encrypt("o"))
        )
        await session.commit()
        await client.get("/iam/activity_log/requests", headers=wrong(ls.client_admin))
        await send_all(dispatcher)
        row = (await session.execute(select(MailMessage))).scalar_one()
        assert row.last_error == f"127.0.0.1:{port}: Could not connect to the mail server."

    async def test_activity_log_masks_the_whole_password_of_an_invalid_string(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        ls: Landscape,
    ):
        # A raw "@" in the password makes the string invalid (400), and the request is
        # still logged: everything before the host's "@" is the password.
        r = await client.post(
            SUBSCRIBE,
            json={"connection_string": "amqp://svc:p@ss@mq.example:5672/v"},
            headers=auth(ls.client_admin),
        )
        assert r.status_code == 400
        [entry] = (await session.execute(select(ActivityLogEntry))).scalars().all()
        assert json.loads(entry.data)["connection_string"] == "amqp://svc:***@mq.example:5672/v"
