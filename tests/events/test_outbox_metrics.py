"""/metrics shows the outbox per subscription (AMQP and webhook), the mail outbox, and
the dispatcher's deliveries and failures. No broker needed: the AMQP subscription points
at a closed port, the webhook at a real receiver on loopback."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from cloudadmin.db.models import MailMessage, UserActionEvent
from cloudadmin.db.types import utcnow
from cloudadmin.events.dispatcher import Dispatcher
from cloudadmin.web.app_state import app_state
from tests.events.conftest import Mailbox
from tests.events.helpers import dispatch_all, make_subscription
from tests.events.receiver import Receiver
from tests.events.test_mail import configure_mail, send_all, wrong
from tests.events.test_webhooks import act, make_webhook
from tests.factories import Landscape, next_id
from tests.scrape import scrape

PENDING = "cloudadmin_outbox_pending"
OLDEST = "cloudadmin_outbox_oldest_pending_age_seconds"
CLOSED_PORT = "amqp://guest:guest@127.0.0.1:1/%2F"


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    r = Receiver()
    await r.start()
    yield r
    await r.stop()


@pytest.fixture
async def both(
    app: FastAPI, session: AsyncSession, ls: Landscape, receiver: Receiver
) -> tuple[int, int]:
    """An AMQP subscription that cannot be reached and a webhook that answers, of the
    client account, each owed the same two events."""
    amqp = await make_subscription(
        session,
        app_state(app).secret_box,
        ls.client_account,
        CLOSED_PORT,
        exchange="x",
        routing_key="y",
    )
    amqp_id = amqp.id
    webhook = await make_webhook(
        session, app_state(app).secret_box, ls.client_account, receiver.url
    )
    await act(session, ls.client_account, 2)
    return amqp_id, webhook


class TestBacklog:
    async def test_pending_and_oldest_age_per_subscription(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        both: tuple[int, int],
    ):
        amqp, webhook = both
        idle = await make_webhook(
            session,
            app_state(app).secret_box,
            ls.other_reseller_account,
            "https://hooks.example/idle",
        )
        samples = await scrape(client)
        assert samples.get(PENDING, kind="amqp", subscription=amqp) == 2
        assert samples.get(PENDING, kind="webhook", subscription=webhook) == 2
        assert 0 <= samples.get(OLDEST, kind="amqp", subscription=amqp) < 600
        # A subscription owed nothing is shown at 0, not left out.
        assert samples.has(PENDING, kind="webhook", subscription=idle)
        assert samples.get(PENDING, kind="webhook", subscription=idle) == 0
        assert samples.get(OLDEST, kind="webhook", subscription=idle) == 0

    async def test_oldest_age_counts_from_the_oldest_event(
        self,
        client: httpx.AsyncClient,
        session: AsyncSession,
        both: tuple[int, int],
    ):
        amqp, _ = both
        await session.execute(
            update(UserActionEvent).values(created_at=utcnow() - timedelta(hours=1))
        )
        await session.commit()
        samples = await scrape(client)
        assert 3600 <= samples.get(OLDEST, kind="amqp", subscription=amqp) < 3600 + 600


class TestDeliveries:
    async def test_deliveries_and_failures_are_counted(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        both: tuple[int, int],
        receiver: Receiver,
    ):
        amqp, webhook = both
        before = await scrape(client)
        dispatcher = Dispatcher(
            app_state(app).engine,
            app_state(app).secret_box,
            lanes=1,
            outbound=app_state(app).outbound,
        )
        try:
            await dispatch_all(dispatcher)
        finally:
            await dispatcher.webhooks.close()
            await dispatcher.brokers.close()
        after = await scrape(client)
        delivered, failed = (
            "cloudadmin_event_deliveries_total",
            "cloudadmin_event_delivery_failures_total",
        )
        assert after.get(delivered, kind="webhook") - before.get(delivered, kind="webhook") == 2
        # At least once: the failed subscription's first backoff is about a second, so on a
        # slow machine it comes due again before the passes run out of work.
        assert after.get(failed, kind="amqp") - before.get(failed, kind="amqp") >= 1
        assert after.get(failed, kind="webhook") == before.get(failed, kind="webhook")
        assert after.get(PENDING, kind="webhook", subscription=webhook) == 0
        assert after.get(PENDING, kind="amqp", subscription=amqp) == 2


class TestMail:
    async def test_mail_outbox_by_state_and_failed_sends(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
    ):
        now = utcnow()
        for sent, attempts in ((False, 0), (False, 2), (True, 0)):
            session.add(
                MailMessage(
                    id=next_id(),
                    kind="failed_login",
                    reseller_id=ls.reseller_account.id,
                    recipients=["ops@example.com"],
                    subject="s",
                    body="b",
                    created_at=now,
                    sent=sent,
                    sent_at=now if sent else None,
                    attempts=attempts,
                    next_attempt_at=now,
                )
            )
        await session.commit()
        before = await scrape(client)
        assert before.get("cloudadmin_mail_outbox", state="pending") == 2
        assert before.get("cloudadmin_mail_outbox", state="failing") == 1
        assert before.get("cloudadmin_mail_outbox", state="sent") == 1
        # The reseller has no mail server: both pending mails fail.
        dispatcher = Dispatcher(
            app_state(app).engine,
            app_state(app).secret_box,
            lanes=1,
            outbound=app_state(app).outbound,
        )
        assert await dispatcher.send_mail_once()
        after = await scrape(client)
        failures = "cloudadmin_mail_failures_total"
        assert after.get(failures) - before.get(failures) == 2
        assert after.get("cloudadmin_mail_sent_total") == before.get("cloudadmin_mail_sent_total")
        assert after.get("cloudadmin_mail_outbox", state="failing") == 2

    async def test_sent_mails_are_counted(
        self,
        client: httpx.AsyncClient,
        app: FastAPI,
        session: AsyncSession,
        ls: Landscape,
        smtp_server: tuple[Mailbox, int],
        dispatcher: Dispatcher,
    ):
        mailbox, port = smtp_server
        await configure_mail(session, app, ls, port)
        before = await scrape(client)
        # A wrong secret of a known key queues a failed-login notice.
        assert (await client.get("/iam/users/1", headers=wrong(ls.client_admin))).status_code == 401
        assert (await scrape(client)).get("cloudadmin_mail_outbox", state="pending") == 1
        await send_all(dispatcher)
        assert len(mailbox.messages) == 1
        after = await scrape(client)
        sent = "cloudadmin_mail_sent_total"
        assert after.get(sent) - before.get(sent) == 1
        assert after.get("cloudadmin_mail_outbox", state="pending") == 0
        assert after.get("cloudadmin_mail_outbox", state="sent") == 1
